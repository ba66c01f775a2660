// The projects tag's operations.
import type { HandlerMap } from '../../src/http/handler-types';
import { listProjects } from './listProjects';
import { createProject } from './createProject';
import { getProject } from './getProject';
import { updateProject } from './updateProject';
import { deleteProject } from './deleteProject';

export const projectsHandlers: HandlerMap = { listProjects, createProject, getProject, updateProject, deleteProject };

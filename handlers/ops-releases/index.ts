import type { HandlerMap } from '../../src/http/handler-types';
import { listReleases } from './listReleases';
import { listCurrentReleases } from './listCurrentReleases';
import { listInstances } from './listInstances';

export const opsReleasesHandlers: HandlerMap = {
  listReleases,
  listCurrentReleases,
  listInstances,
};

import type { HandlerMap } from '../types';
import { getMailConfig } from './getMailConfig';
import { sendTestMail } from './sendTestMail';

export const opsMailHandlers: HandlerMap = {
  getMailConfig,
  sendTestMail,
};

import type { HandlerMap } from '../../src/http/handler-types';
import { getMailConfig } from './getMailConfig';
import { sendTestMail } from './sendTestMail';

export const opsMailHandlers: HandlerMap = {
  getMailConfig,
  sendTestMail,
};

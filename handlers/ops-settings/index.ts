import type { HandlerMap } from '../../src/http/handler-types';
import { listSettings } from './listSettings';
import { getSetting } from './getSetting';
import { updateSetting } from './updateSetting';
import { resetSetting } from './resetSetting';
import { listSettingHistory } from './listSettingHistory';
import { listRetentionPolicies } from './listRetentionPolicies';

export const opsSettingsHandlers: HandlerMap = {
  listSettings,
  getSetting,
  updateSetting,
  resetSetting,
  listSettingHistory,
  listRetentionPolicies,
};

// The settings domain's error codes (a test checks them against openapi.yaml).
import { defineErrors } from '../errors';

const settingErrors = defineErrors('settings', {
  invalidSettingValue: { code: 'invalid_setting_value', status: 422, detail: 'The value is not acceptable for this setting.' },
});

/** 422 `invalid_setting_value` located at `body.value`. */
export function invalidSettingValue(key: string, message: string) {
  return settingErrors.invalidSettingValue(`The value is not acceptable for ${key}.`, { errors: [{ location: 'body.value', message }] });
}

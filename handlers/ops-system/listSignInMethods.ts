import type { Handler } from '../../src/http/handler-types';
import { describeSignInMethods } from '../../src/system/sign-in-methods';

export const listSignInMethods: Handler<'listSignInMethods'> = ({ app }) => ({
  status: 200,
  body: {
    items: describeSignInMethods(app.config).map((m) => ({
      method: m.method,
      used_for: m.usedFor,
      enabled: m.enabled,
      configured: m.configured,
      available: m.available,
      missing: m.missing,
    })),
    next_cursor: null,
  },
});

import type { Handler } from '../../src/http/handler-types';
import { buildInfo } from '../../src/system/build-info';

export const getVersion: Handler<'getVersion'> = ({ app }) => {
  const info = buildInfo(app.config, app.contract.version);
  return {
    status: 200,
    body: { version: info.version, commit: info.commit, built_at: info.builtAt, node: info.node, api_version: info.apiVersion },
  };
};

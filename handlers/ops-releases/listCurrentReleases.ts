import type { Handler } from '../../src/http/handler-types';
import { toApiRelease } from './views';

export const listCurrentReleases: Handler<'listCurrentReleases'> = async ({ services }) => {
  const running = await services.releases.listRunning();
  return { status: 200, body: { items: running.map((r) => ({ release: toApiRelease(r.release), instances: r.instances })), next_cursor: null } };
};

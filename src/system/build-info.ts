import type { Config } from '../config';

export function buildInfo(config: Config, apiVersion: string) {
  return {
    version: config.build.version,
    commit: config.build.commit,
    builtAt: config.build.builtAt,
    node: process.version,
    apiVersion,
  };
}

// Finds the operation a request is for. The contract's paths are compiled once, at start-up; a
// request costs one lookup of its path and one of its method.
import { compilePathMatcher, type Contract, type OperationInfo } from '../contract';
import { problems } from './problem';

/** A path of the contract: its operations by HTTP method (upper case, as Node gives it) and its `Allow`. */
interface PathEntry<R> {
  routes: Map<string, R>;
  allow: string[];
}

/** The most specific path (exact paths first, see compilePathMatcher), then the method: 404, or 405 with Allow. */
export function compileMatcher<R extends { info: OperationInfo }>(contract: Contract, all: R[]): (method: string, path: string) => R {
  const paths = new Map<string, PathEntry<R>>();
  for (const route of all) {
    const path = route.info.path;
    let entry = paths.get(path);
    if (!entry) paths.set(path, (entry = { routes: new Map(), allow: contract.allowByPath.get(path) ?? [] }));
    entry.routes.set(route.info.method.toUpperCase(), route);
  }
  // HEAD answers as GET does (RFC 9110 9.3.2) where the path allows it; Node sends the headers
  // and drops the body.
  for (const entry of paths.values()) {
    const get = entry.routes.get('GET');
    if (get && entry.allow.includes('HEAD') && !entry.routes.has('HEAD')) entry.routes.set('HEAD', get);
  }
  const matchPath = compilePathMatcher(paths);
  return (method, path) => {
    const entry = matchPath(path);
    if (!entry) throw problems.notFound('No such path.');
    const route = entry.routes.get(method);
    if (!route) throw problems.methodNotAllowed(entry.allow);
    return route;
  };
}

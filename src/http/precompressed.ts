// Static answers (the Redoc bundle, the contract) compressed once per encoding, at the strongest
// level, instead of on every request: brotli over the 1 MB Redoc bundle costs tens of
// milliseconds of CPU, which anyone could make the service spend in a loop. Compressed on the
// thread pool at first use; until then the answer goes uncompressed.
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Request, Response } from 'express';
import type { Contract } from '../contract';

const ENCODERS = {
  br: (body: Buffer) => promisify(zlib.brotliCompress)(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: zlib.constants.BROTLI_MAX_QUALITY } }),
  gzip: (body: Buffer) => promisify(zlib.gzip)(body, { level: zlib.constants.Z_BEST_COMPRESSION }),
};
type Encoding = keyof typeof ENCODERS;

export class Precompressed {
  private readonly body: Buffer;
  private readonly variants = new Map<Encoding, Promise<Buffer>>();

  constructor(text: string) {
    this.body = Buffer.from(text, 'utf8');
  }

  /**
   * The body in the encoding the request prefers (br, gzip, else as it is), with Content-Encoding
   * and `Vary: Accept-Encoding` set. The compression middleware leaves an encoded answer alone.
   */
  async for(req: Request, res: Response): Promise<Buffer> {
    res.vary('Accept-Encoding');
    const encoding = preferredEncoding(req.headers['accept-encoding']);
    if (!encoding) return this.body;
    let variant = this.variants.get(encoding);
    if (!variant) {
      variant = ENCODERS[encoding](this.body);
      this.variants.set(encoding, variant);
      variant.catch(() => this.variants.delete(encoding));
    }
    const encoded = await variant.catch(() => null);
    if (!encoded) return this.body;
    res.setHeader('Content-Encoding', encoding);
    return encoded;
  }
}

const servedContracts = new WeakMap<Contract, Record<'json' | 'yaml', Precompressed>>();

/** The contract as `/openapi.json` or `/openapi.yaml` serve it, compressed once per encoding. */
export function servedContract(contract: Contract, format: 'json' | 'yaml'): Precompressed {
  let served = servedContracts.get(contract);
  if (!served) servedContracts.set(contract, (served = { json: new Precompressed(contract.jsonText), yaml: new Precompressed(contract.yamlText) }));
  return served[format];
}

/** br or gzip by the client's q-values, br on a tie (smaller), as the compression middleware picks. */
function preferredEncoding(header: string | undefined): Encoding | null {
  if (!header) return null;
  const q = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const weight = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    q.set(name.trim(), weight === undefined ? 1 : Number(weight));
  }
  const of = (name: Encoding) => q.get(name) ?? q.get('*') ?? 0;
  const [br, gzip] = [of('br'), of('gzip')];
  if (br <= 0 && gzip <= 0) return null;
  return br >= gzip ? 'br' : 'gzip';
}

// Command-line options of the benchmarks: `--flag value` or `--flag=value`; a wrong or unknown
// argument throws the usage line with what was wrong.

type NumberKey<O> = { [K in keyof O]: O[K] extends number ? K : never }[keyof O];

export interface OptionSpec<O> {
  usage: string;
  /** Whole-number options: flag → option. At least 1, or 0 for the flags in `mayBeZero`. */
  numbers: Record<string, NumberKey<O>>;
  mayBeZero?: string[];
  /** Flags without a value: flag → what it sets. */
  switches?: Record<string, (opts: O) => void>;
  /** Flags with a value other than a number: flag → what the value is (for the error when it is missing) and what it sets. */
  values?: Record<string, { needs: string; set: (opts: O, value: string) => void }>;
}

export function parseOptions<O extends object>(argv: string[], defaults: O, spec: OptionSpec<O>): O {
  const opts = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.split('=', 2) as [string, string | undefined];
    const own = <T>(table: Record<string, T> | undefined) => (table && Object.hasOwn(table, flag) ? table[flag] : undefined);
    const key = own(spec.numbers);
    const value = own(spec.values);
    const set = own(spec.switches);
    if (set) set(opts);
    else if (value) {
      const v = inline ?? argv[++i];
      if (!v) throw new Error(`${spec.usage}\n(${flag} needs ${value.needs})`);
      value.set(opts, v);
    } else if (key !== undefined) {
      const n = Number(inline ?? argv[++i]);
      if (!Number.isInteger(n) || n < (spec.mayBeZero?.includes(flag) ? 0 : 1)) throw new Error(`${spec.usage}\n(bad value for ${flag})`);
      (opts as Record<NumberKey<O>, number>)[key] = n;
    } else throw new Error(`${spec.usage}\n(unknown argument: ${arg})`);
  }
  return opts;
}

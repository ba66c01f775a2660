// The settings in force in this process: the environment's defaults, overlaid with the overrides
// stored in PostgreSQL. Read synchronously on hot paths (rate limits, the session lookup), so they
// are held in memory and reloaded (one small query) when:
//   - this instance changed one (right after the commit),
//   - another instance announces a change on the Redis channel `<prefix>settings` (within a second),
//   - every RELOAD_MS regardless: the safety net for a lost message or a Redis outage.
// A reload that fails keeps the values already in force (and is retried on the next tick).
import type { Knex } from 'knex';
import type { Logger } from '../logger';
import type { RedisClient } from '../platform/redis';
import { checkValue, isSettingKey, SETTING_KEYS, type SettingKey, type SettingOf, type SettingValue } from '../config/settings-catalog';
import { readOverrides } from './store';

const RELOAD_MS = 10_000;

export class RuntimeSettings {
  private overrides = new Map<SettingKey, SettingValue>();
  private subscriber: RedisClient | null = null;
  private timer: NodeJS.Timeout | null = null;
  private reloading: Promise<void> | null = null;
  private again = false;
  private readonly warned = new Set<string>();

  constructor(
    private readonly deps: {
      defaults: Record<SettingKey, SettingValue>;
      db: () => Knex;
      redis: RedisClient;
      channel: string;
      logger: Logger;
      reloadMs?: number;
    },
  ) {}

  /** The value in force: the override, else the default. */
  get<K extends SettingKey>(key: K): SettingOf<K> {
    return (this.overrides.has(key) ? this.overrides.get(key) : this.deps.defaults[key]) as SettingOf<K>;
  }

  default(key: SettingKey): SettingValue {
    return this.deps.defaults[key];
  }

  /** Loads the overrides, then follows changes (pub/sub and the periodic reload). */
  async start(): Promise<void> {
    await this.reload();
    this.timer = setInterval(() => void this.reload(), this.deps.reloadMs ?? RELOAD_MS);
    this.timer.unref();
    // A subscribed connection can send nothing else: a connection of its own, which ioredis
    // reconnects and resubscribes by itself after an outage. Its SUBSCRIBE waits for Redis (no
    // retry limit) instead of failing while Redis is down: the subscription starts when it is back.
    const subscriber = this.deps.redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, commandTimeout: undefined });
    subscriber.on('error', () => undefined); // outages are logged by the dependency monitor
    subscriber.on('message', (channel: string) => {
      if (channel === this.deps.channel) void this.reload();
    });
    this.subscriber = subscriber;
    subscriber.subscribe(this.deps.channel).catch((err: unknown) => {
      this.deps.logger.warn('settings: cannot subscribe to changes; the periodic reload still applies them', { error: String(err) });
    });
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const subscriber = this.subscriber;
    this.subscriber = null;
    subscriber?.disconnect(); // nothing to flush: a subscriber only listens
  }

  /** After a change committed here: apply it now, and tell the other instances. */
  async changed(key: SettingKey): Promise<void> {
    await this.reload();
    await this.deps.redis.publish(this.deps.channel, key).catch((err: unknown) => {
      this.deps.logger.warn('settings: change not announced (Redis); other instances apply it within the periodic reload', {
        key,
        reload_ms: this.deps.reloadMs ?? RELOAD_MS,
        error: String(err),
      });
    });
  }

  /** Reads the overrides; concurrent calls share one query and a call during it triggers one more. */
  reload(): Promise<void> {
    if (this.reloading) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      do {
        this.again = false;
        try {
          this.apply(this.valid(await readOverrides(this.deps.db())));
        } catch (err) {
          this.deps.logger.warn('settings: reload failed; the values in force stay', { error: err instanceof Error ? err.message : String(err) });
        }
      } while (this.again);
      this.reloading = null;
    })();
    return this.reloading;
  }

  /** Overrides of keys this release knows, whose values its rules accept (others are ignored, and logged). */
  private valid(rows: { key: string; value: SettingValue }[]): Map<SettingKey, SettingValue> {
    const valid = new Map<SettingKey, SettingValue>();
    for (const { key, value } of rows) {
      if (!isSettingKey(key)) continue;
      const checked = checkValue(key, value);
      if ('error' in checked) {
        if (!this.warned.has(key)) this.deps.logger.warn('setting override ignored: this release refuses its value; reset or change it', { key, value, error: checked.error });
        this.warned.add(key);
      } else valid.set(key, checked.value);
    }
    return valid;
  }

  private apply(next: Map<SettingKey, SettingValue>): void {
    for (const key of SETTING_KEYS) {
      const before = this.get(key);
      const after = next.has(key) ? next.get(key)! : this.deps.defaults[key];
      if (before !== after) this.deps.logger.info('setting in force changed', { key, value_before: before, value_after: after });
    }
    this.overrides = next;
  }
}

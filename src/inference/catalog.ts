/**
 * The service's catalog of models available now: each model's entry by id, and the names a request
 * may use for it: its id, its own aliases, and the aliases from configuration (exact names and `*`
 * patterns). The entries themselves (loading, leases, unloading) belong to the service; this only
 * keeps them and finds them by name.
 */
import type { ModelInfo } from '../models/registry.js';

export class ModelCatalog<E extends { info: ModelInfo }> {
  /** The models available now, by id. */
  private readonly entries = new Map<string, E>();
  /** Ids and the models' own aliases -> entry: rebuilt when the models change, read by every request. */
  private readonly names = new Map<string, E>();
  /** Configured aliases: exact names -> model id, and `*` patterns in configuration order. */
  private readonly aliasTargets: Map<string, string>;
  private readonly aliasPatterns: Array<{ pattern: RegExp; target: string }>;

  /** Takes in `entries`, then the configured aliases, each of which must name one of them by id. */
  constructor(entries: E[], aliases: Record<string, string>) {
    for (const entry of entries) this.add(entry);
    // Aliases name models by id, resolved at each lookup: a model added later is found, a removed one is not.
    const pairs = Object.entries(aliases);
    for (const [alias, target] of pairs) {
      if (!this.entries.has(target)) throw new Error(`alias ${alias} points to unknown model ${target}`);
    }
    this.aliasTargets = new Map(pairs.filter(([alias]) => !alias.includes('*')));
    this.aliasPatterns = pairs.filter(([alias]) => alias.includes('*')).map(([alias, target]) => ({ pattern: globPattern(alias), target }));
  }

  get(id: string): E | undefined {
    return this.entries.get(id);
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  values(): IterableIterator<E> {
    return this.entries.values();
  }

  add(entry: E): void {
    this.entries.set(entry.info.id, entry);
    this.indexNames(entry);
  }

  /** Takes a model out by id, and its names with it (the names it shadowed answer again). */
  delete(id: string): void {
    if (this.entries.delete(id)) this.reindexNames();
  }

  clear(): void {
    this.entries.clear();
    this.names.clear();
  }

  /** Rebuilds the name index from the models available now. */
  private reindexNames(): void {
    this.names.clear();
    for (const entry of this.entries.values()) this.names.set(entry.info.id, entry);
    for (const entry of this.entries.values()) this.indexNames(entry);
  }

  /** A model by id, by its own alias, by a configured alias, or by the first configured pattern it matches. */
  named(name: string): E | undefined {
    const direct = this.names.get(name);
    if (direct) return direct;
    const target = this.aliasTargets.get(name) ?? this.aliasPatterns.find(({ pattern }) => pattern.test(name))?.target;
    return target === undefined ? undefined : this.entries.get(target);
  }

  /** Adds a model's names to the index: its id over any other model's alias, an alias only where free. */
  private indexNames(entry: E): void {
    const { id, aliases } = entry.info;
    if (this.names.get(id)?.info.id !== id) this.names.set(id, entry);
    for (const alias of aliases) if (!this.names.has(alias)) this.names.set(alias, entry);
  }
}

/** `claude-haiku-*` -> /^claude-haiku-.*$/: `*` matches any run of characters, everything else itself. */
function globPattern(glob: string): RegExp {
  return new RegExp(`^${glob.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

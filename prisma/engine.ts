// Prisma's own schema engine, compiled to WebAssembly (`@prisma/schema-engine-wasm`), driven
// through the `pg` driver adapter. This replaces the native schema-engine binary that the Prisma
// CLI downloads on first use, which air-gapped machines and clusters cannot fetch.
//
// The package entry imports its `.wasm` file as an ES module, which Node's loader refuses, so we
// instantiate the bytes ourselves and hand the exports to the generated bindings.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import * as bg from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { SchemaEngine } from '@prisma/schema-engine-wasm';

type WasmExports = Record<string, unknown>;
type Bindings = typeof bg & { __wbg_set_wasm(exports: WasmExports): void };
// Node has WebAssembly at runtime; our lib settings (no DOM) carry no types for it.
const wasmApi = (globalThis as unknown as { WebAssembly: { instantiate(bytes: Uint8Array, imports: object): Promise<{ instance: { exports: WasmExports } }> } }).WebAssembly;

let loaded: Promise<typeof bg> | undefined;

/**
 * The engine arms a timer for every lock wait (its 10 s advisory-lock timeout) and never clears
 * it, so a `hermes migrate` that had finished lingered until it fired. Its timers are unref'd:
 * they still fire while the engine works, but never keep the process alive on their own.
 */
function withUnrefTimers(bindings: typeof bg): Record<string, unknown> {
  const imports: Record<string, unknown> = { ...bindings };
  for (const name of Object.keys(imports).filter((k) => k.startsWith('__wbg_setTimeout_'))) {
    imports[name] = (fn: () => void, ms: number) => setTimeout(fn, ms >>> 0).unref();
  }
  return imports;
}

function loadBindings(): Promise<typeof bg> {
  loaded ??= (async () => {
    const require = createRequire(import.meta.url);
    const bgPath = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg');
    const bytes = await readFile(join(dirname(bgPath), 'schema_engine_bg.wasm'));
    const { instance } = await wasmApi.instantiate(bytes, { './schema_engine_bg.js': withUnrefTimers(bg) });
    (bg as Bindings).__wbg_set_wasm(instance.exports);
    (instance.exports as { __wbindgen_start?: () => void }).__wbindgen_start?.();
    return bg;
  })();
  return loaded;
}

type PerformIO = (this: unknown, ...args: unknown[]) => Promise<{ fields: { dataTypeID: number }[] }>;
const PG_CHAR_OID = 18;
const PG_TEXT_OID = 25;
let patched = false;

/**
 * The pg driver adapter maps no column type for Postgres' internal one-byte `"char"` (OID 18),
 * which the engine's catalog introspection selects (relkind, contype, …), so every diff against
 * a live database failed with "Column type 'char' could not be deserialized". We report those
 * columns as text, which is what they are. Patched once, on the adapter's shared query class.
 */
function readCatalogCharAsText(adapter: object): void {
  if (patched) return;
  let proto: object | null = Object.getPrototypeOf(adapter);
  while (proto && !Object.hasOwn(proto, 'performIO')) proto = Object.getPrototypeOf(proto);
  if (!proto) throw new Error('schema engine: @prisma/adapter-pg changed shape (no performIO); update prisma/engine.ts');
  const target = proto as { performIO: PerformIO };
  const original = target.performIO;
  target.performIO = async function (this: unknown, ...args: unknown[]) {
    const result = await original.apply(this, args);
    for (const field of result.fields) if (field.dataTypeID === PG_CHAR_OID) field.dataTypeID = PG_TEXT_OID;
    return result;
  };
  patched = true;
}

interface ScriptRunner { client: { query(sql: string): Promise<unknown> }; onError(e: unknown): never; executeScript(script: string): Promise<void> }

/**
 * The adapter runs a migration script by splitting it on every `;`, which breaks any function
 * body (`$$ … ; … $$`) and any comment holding a semicolon. Postgres' simple-query protocol
 * takes a whole multi-statement script in one round trip, as Prisma's native engine sends it.
 */
function runScriptsWhole(adapter: object): void {
  const a = adapter as ScriptRunner;
  if (typeof a.client?.query !== 'function') throw new Error('schema engine: @prisma/adapter-pg changed shape (no client); update prisma/engine.ts');
  a.executeScript = async function (this: ScriptRunner, script: string) {
    try {
      await this.client.query(script);
    } catch (error) {
      this.onError(error);
    }
  };
}

function prepare(adapter: object): object {
  readCatalogCharAsText(adapter);
  runScriptsWhole(adapter);
  return adapter;
}

function catalogSafeFactory(connectionString: string, opened: { dispose(): Promise<void> }[]): PrismaPg {
  const factory = new PrismaPg({ connectionString });
  const connect = factory.connect.bind(factory);
  const connectToShadowDb = factory.connectToShadowDb.bind(factory);
  factory.connect = async () => { const a = await connect(); opened.push(a); return prepare(a) as typeof a; };
  factory.connectToShadowDb = async () => { const a = await connectToShadowDb(); opened.push(a); return prepare(a) as typeof a; };
  return factory;
}

export interface EngineHandle {
  engine: SchemaEngine;
  /** Frees the engine and closes its database connections (an open pool keeps a CLI alive). */
  close(): Promise<void>;
}

/** Opens a schema engine on `databaseUrl` with `schemaText` as its datamodel. */
export async function openSchemaEngine(databaseUrl: string, schemaPath: string, schemaText: string, log?: (line: string) => void): Promise<EngineHandle> {
  const bindings = await loadBindings();
  const opened: { dispose(): Promise<void> }[] = [];
  const adapter = bindMigrationAwareSqlAdapterFactory(catalogSafeFactory(databaseUrl, opened));
  const engine = await bindings.SchemaEngine.new({ datamodels: [[schemaPath, schemaText]] }, (line: string) => log?.(line), adapter);
  return {
    engine,
    async close() {
      engine.free();
      await Promise.allSettled(opened.map((a) => a.dispose()));
    },
  };
}

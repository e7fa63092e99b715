// SPDX-License-Identifier: BSD-2-Clause
// Types of warrant-decider (lib/index.js).
import type { Redis, Cluster } from 'ioredis';

/** A time: a Date, epoch milliseconds, an RFC 3339 UTC string ("...Z"), or {in: ms from now}. */
export type Time = Date | number | string | { in: number };
export type Json = string | number | boolean | null | bigint | Json[] | { [k: string]: Json };

export class WarrantError extends Error {}
export class RecordError extends WarrantError { field: string; code: 'record-invalid' | 'unknown-action'; }
export class UnknownActionError extends RecordError { code: 'unknown-action'; }
export class RecordExistsError extends WarrantError { field: 'recordId'; recordId: string; }
export class KeyFileError extends WarrantError {}
export class ConfigError extends WarrantError {}
export class NotPermittedError extends WarrantError {}
export class WaitTimeout extends WarrantError { recordId: string; status: Status | null; }

export interface SettingsInit {
  socket?: string | null; host?: string; port?: number; db?: number;
  /** [redis] allow_hosts (issue 37): host[:port], a.b.c.d/n[:port], [v6]:port, ...; null: the configured host:port, seeds and what a seed announces */
  allowHosts?: string | null; allowPlaintext?: boolean;
  username?: string | null; password?: string | null; passwordFile?: string | null;
  prefix?: string; shards?: number; cluster?: { host: string; port: number }[] | null; tls?: boolean;
  tlsCaFile?: string | null; tlsCertFile?: string | null; tlsKeyFile?: string | null; tlsServerName?: string | null;
  signature?: boolean; algorithm?: 'ES256' | 'RS256' | 'HS256'; issuer?: string | null; audience?: string | null;
  maxWindowS?: number; clockSkewS?: number; maxBytes?: number; actions?: string[] | null;
  baseDir?: string; monitorUsername?: string | null; monitorPasswordFile?: string | null;
}
export class Settings implements SettingsInit { constructor(o?: SettingsInit); path(name: string): string; }
export function loadConfig(path: string): Settings;

export interface DecideOptions { notBefore?: Time; notify?: string; recordId?: string; traceparent?: string; issuer?: string; audience?: string; }
export interface Decision extends DecideOptions {
  subject: string; action: string; resource: string; parameters: { [k: string]: Json }; basis: string; expiresAt: Time;
}
export interface Prepared { id: string; shard: number; text: string; createdAt: string; score: number | null; traceparent: string | null; }
/** The record's hash without the record: state, createdAt, outcome, detail, attempts, ... */
export type Status = { state: string; [field: string]: string };

export class Signer {
  constructor(alg: 'ES256' | 'RS256' | 'HS256', key: unknown, kid?: string | null);
  static fromFile(alg: 'ES256' | 'RS256' | 'HS256', path: string, kid?: string | null): Signer;
  readonly alg: string; readonly kid: string | null;
  sign(payload: Buffer): string;
}

export interface DeciderOptions {
  config?: string; settings?: Settings | SettingsInit; keyFile?: string; kid?: string; signer?: Signer;
  issuer?: string; audience?: string; clock?: () => number; redis?: Redis | Cluster;
}
export class Decider {
  constructor(o?: DeciderOptions);
  readonly redis: Redis | Cluster;
  decide(subject: string, action: string, resource: string, parameters: { [k: string]: Json }, basis: string,
    expiresAt: Time, options?: DecideOptions): Promise<string>;
  decideMany(decisions: Decision[]): Promise<string[]>;
  prepare(d: Decision): Prepared;
  status(recordId: string): Promise<Status | null>;
  wait(recordId: string, timeoutMs: number): Promise<Status>;
  cancel(recordId: string): Promise<never>;
  retry(recordId: string): Promise<never>;
  rotate(keyFile: string, kid: string): void;
  close(): Promise<void>;
}

export const TERMINAL: Set<string>;
export function fnv1a32(data: Uint8Array): number;
export function shardOf(recordId: string, shards: number): number;
export function keysOf(prefix: string, shard: number, shards: number): { jobs: string; scheduled: string; decision: string };
export function newId(): string;
export function fmtTime(ms: number): string;
export function parseTime(s: string): number;
export function payloadOf(jws: string): Buffer;
export function keygen(out?: string, alg?: 'ES256' | 'RS256' | 'HS256', kid?: string | null): Promise<string[]>;

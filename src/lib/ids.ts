import { v7 } from 'uuid';

/** Time-ordered UUID (v7): ids sort by creation time, which keeps primary-key indexes compact. */
export function newId(): string {
  return v7();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for any well-formed UUID; ids in paths are checked with it before touching the database. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export function isUuidV4(value: string): boolean {
  return UUID_V4.test(value);
}

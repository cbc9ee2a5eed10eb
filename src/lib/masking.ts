/**
 * Masking rules of the contract, written once. Account numbers show their last 4 characters,
 * addresses their first 6 and last 4; everything else is an asterisk, so the length stays visible.
 */
export function maskAccountNumber(value: string): string {
  if (value.length <= 4) return '*'.repeat(value.length);
  return '*'.repeat(value.length - 4) + value.slice(-4);
}

export function maskAddress(value: string): string {
  if (value.length <= 10) return '*'.repeat(value.length);
  return value.slice(0, 6) + '*'.repeat(value.length - 10) + value.slice(-4);
}

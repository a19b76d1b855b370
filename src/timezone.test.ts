import { resolveTimeZone } from './timezone';

describe('resolveTimeZone', () => {
  it('resolves the browser default to the browser zone', () => {
    expect(resolveTimeZone('browser', () => 'Europe/Berlin')).toBe('Europe/Berlin');
    expect(resolveTimeZone('', () => 'Asia/Kolkata')).toBe('Asia/Kolkata');
    expect(resolveTimeZone(undefined, () => 'America/New_York')).toBe('America/New_York');
  });
  it('falls back to UTC when the browser has none', () => {
    expect(resolveTimeZone('browser', () => undefined)).toBe('UTC');
  });
  it('passes UTC and IANA names through', () => {
    expect(resolveTimeZone('utc', () => 'Europe/Berlin')).toBe('UTC');
    expect(resolveTimeZone('Australia/Adelaide', () => 'Europe/Berlin')).toBe('Australia/Adelaide');
  });
});

// What Grafana's index page sets before any plugin code runs: the boot data
// @grafana/runtime reads as it loads (settings, the signed-in user). The
// host page has no server, so it is empty; main.tsx imports this first.
const w = window as unknown as { grafanaBootData?: unknown };
w.grafanaBootData ??= { assets: { dark: '', light: '' }, settings: {}, user: {}, navTree: [] };

export {};

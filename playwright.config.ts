// Playwright with @grafana/plugin-e2e against a real Grafana (`npm run e2e`,
// where @grafana/create-plugin puts this file): the specs and settings are
// test/grafana/plugin-e2e's, which the Go test test/grafana runs. The
// editors' own browser tests without Grafana are test/editors
// (`npm run test:editors`).
export { default } from './test/grafana/plugin-e2e/playwright.config';

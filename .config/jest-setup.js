// Set up before every test: Testing Library's DOM matchers, and the browser
// APIs Grafana's UI components use that jsdom lacks.
import '@testing-library/jest-dom';
import { TextDecoder, TextEncoder } from 'util';

Object.assign(global, { TextDecoder, TextEncoder });

Object.defineProperty(window, 'matchMedia', {
  writable: true,
  value: (query) => ({
    matches: false,
    media: query,
    onchange: null,
    addListener: () => {},
    removeListener: () => {},
    addEventListener: () => {},
    removeEventListener: () => {},
    dispatchEvent: () => false,
  }),
});

// Some @grafana/ui components measure text on a canvas.
HTMLCanvasElement.prototype.getContext = () => null;

// Grafana's selects (11 and later) watch their menus with these observers,
// which jsdom does not have; here nothing is ever visible or resized.
class NoObserver {
  observe() {}
  unobserve() {}
  disconnect() {}
  takeRecords() {
    return [];
  }
}
for (const name of ['IntersectionObserver', 'ResizeObserver']) {
  if (!(name in window)) {
    Object.defineProperty(window, name, { writable: true, configurable: true, value: NoObserver });
  }
}

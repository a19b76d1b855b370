// Testing Library's matchers (toBeInTheDocument, ...) on jest's expect, for
// the type checker: .config/jest-setup.js loads them at run time.
import '@testing-library/jest-dom';

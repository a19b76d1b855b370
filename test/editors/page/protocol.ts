// What the host page and the Playwright specs share: the shape of the
// emissions the page records (window.__emitted) and of the initial state a
// spec may hand the page before it loads (window.__JOBSIGHT_EDITORS__).
// Types only: the specs import this file without bundling the page.
import type { DataSourceSettings } from '@grafana/data';

import type { JobsightVariableQuery } from '../../../src/components/VariableQueryEditor';
import type { JobsightOptions, JobsightQuery, JobsightSecureJsonData, OptionKind } from '../../../src/types';

/** The three editors the page mounts. */
export type EditorName = 'config' | 'query' | 'variable';

/** The datasource settings the ConfigEditor edits. */
export type Settings = DataSourceSettings<JobsightOptions, JobsightSecureJsonData>;

/**
 * One call an editor made to what the page hands it: onOptionsChange
 * (ConfigEditor), onChange (QueryEditor, VariableQueryEditor) or onRunQuery
 * (QueryEditor; value is then the query Grafana would run).
 */
export interface Emission {
  /** Order among all emissions of the page, from 1. */
  seq: number;
  editor: EditorName;
  event: 'onOptionsChange' | 'onChange' | 'onRunQuery';
  /** The settings or query as JSON would store it (undefined keys dropped). */
  value: unknown;
  /** VariableQueryEditor: the one-line description it passed along. */
  definition?: string;
}

/**
 * A point where a spec's person has finished something: the last value an
 * editor emitted is then either valid for the Go models, or invalid with an
 * error containing expectError.
 */
export interface Checkpoint {
  /** The emission (seq) it marks. */
  seq: number;
  editor: EditorName;
  label: string;
  expectError?: string;
}

/** One call the editors made to the stand-in datasource's resources. */
export interface ResourceCall {
  path: string;
  params: Record<string, unknown>;
}

/** Initial state a spec may set before the page loads (page.addInitScript). */
export interface PageInit {
  theme?: 'dark' | 'light';
  /** Merged over the page's new, unconfigured datasource settings. */
  options?: Partial<Settings>;
  /** The panel query; default: what Grafana gives a new query. */
  query?: JobsightQuery;
  /** The variable's query; default '' (what Grafana stores before one is chosen). */
  variableQuery?: JobsightVariableQuery | string;
  /** Dashboard template variables; default cluster=alpha, user=alice,bob. */
  variables?: Record<string, string | string[]>;
  /** The stand-in backend's option lists; default OPTION_LISTS. */
  optionLists?: OptionLists;
}

/** Option lists per kind, and per cluster for the narrowed lists. */
export interface OptionLists {
  all: Partial<Record<OptionKind, string[]>>;
  byCluster?: Record<string, Partial<Record<OptionKind, string[]>>>;
}

/** The option lists the stand-in datasource answers unless a spec gives others. */
export const OPTION_LISTS: OptionLists = {
  all: {
    clusters: ['alpha', 'beta'],
    users: ['alice', 'bob', 'carol', 'dave'],
    accounts: ['physics', 'chemistry', 'ml-lab'],
    partitions: ['cpu', 'gpu', 'debug'],
    states: ['RUNNING', 'PENDING', 'COMPLETED', 'FAILED', 'TIMEOUT', 'OUT_OF_MEMORY', 'CANCELLED'],
    classes: ['efficient', 'acceptable', 'inefficient', 'wasted', 'short', 'unknown'],
  },
  byCluster: {
    alpha: { users: ['alice', 'bob', 'carol'], accounts: ['physics', 'chemistry'], partitions: ['cpu', 'gpu'] },
    beta: { users: ['dave'], accounts: ['ml-lab'], partitions: ['debug'] },
  },
};

/** What the page puts on window for the specs. */
export interface PageGlobals {
  __JOBSIGHT_EDITORS__?: PageInit;
  __emitted: Emission[];
  __checkpoints: Checkpoint[];
  __resourceCalls: ResourceCall[];
  /** Calls to Grafana services that no editor should make here (backendSrv). */
  __unexpected: string[];
  /** Marks the last value the editor emitted (see Checkpoint); throws if it emitted none. */
  __checkpoint: (editor: EditorName, label: string, expectError?: string) => Checkpoint;
  /** Set once the page has rendered. */
  __ready?: boolean;
  /** The React the page runs (18 for dist, 19 for dist-grafana13). */
  __reactVersion?: string;
}

// The editors' host page: the plugin's ConfigEditor, QueryEditor and
// VariableQueryEditor (from src/, as shipped) rendered with the real
// @grafana/ui and @grafana/data inside Grafana's theme, each in its own
// section, their state kept here the way Grafana keeps it (the editor
// reports a change, the page hands the changed value back as props). No
// Grafana runs: see fakes.ts for what stands in for it.
//
// For the specs the page shows the latest value of each editor as JSON
// (<pre data-testid="config-json|query-json|variable-json">) and records
// every emission, checkpoint and resource call on window (protocol.ts).
// First: Grafana's boot data, before @grafana/runtime loads.
import './boot';

import React, { useEffect, useMemo, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { CoreApp, createTheme } from '@grafana/data';
import { setBackendSrv, setTemplateSrv } from '@grafana/runtime';
import { GlobalStyles, ThemeContext } from '@grafana/ui';

import { ConfigEditor } from '../../../src/components/ConfigEditor';
import { QueryEditor } from '../../../src/components/QueryEditor';
import { JobsightVariableQuery, VariableQueryEditor } from '../../../src/components/VariableQueryEditor';
import { DataSource } from '../../../src/datasource';
import { fakeTemplateSrv } from '../../../src/test/templateSrv';
import { JobsightQuery } from '../../../src/types';
import { fakeBackendSrv, fakeDataSource, instanceSettings } from './fakes';
import { Checkpoint, EditorName, Emission, OPTION_LISTS, PageGlobals, PageInit, Settings } from './protocol';

const w = window as unknown as Window & PageGlobals;
const init: PageInit = w.__JOBSIGHT_EDITORS__ ?? {};
const theme = createTheme({
  colors: { mode: init.theme ?? (new URLSearchParams(location.search).get('theme') === 'light' ? 'light' : 'dark') },
});

w.__reactVersion = React.version;
w.__emitted = [];
w.__checkpoints = [];
w.__resourceCalls = [];
w.__unexpected = [];
w.__checkpoint = (editor: EditorName, label: string, expectError?: string): Checkpoint => {
  const last = [...w.__emitted].reverse().find((e) => e.editor === editor && e.event !== 'onRunQuery');
  if (!last) {
    throw new Error(`checkpoint ${label}: the ${editor} editor has emitted nothing yet`);
  }
  const c: Checkpoint = { seq: last.seq, editor, label, ...(expectError ? { expectError } : {}) };
  w.__checkpoints.push(c);
  return c;
};

/** Records one emission as JSON would store it. */
function emit(editor: EditorName, event: Emission['event'], value: unknown, definition?: string) {
  const e: Emission = { seq: w.__emitted.length + 1, editor, event, value: JSON.parse(JSON.stringify(value ?? null)) };
  if (definition !== undefined) {
    e.definition = definition;
  }
  w.__emitted.push(e);
}

// Grafana's services the editors reach through @grafana/runtime.
setTemplateSrv(fakeTemplateSrv(init.variables ?? { cluster: 'alpha', user: ['alice', 'bob'] }));
setBackendSrv(fakeBackendSrv(w.__unexpected));

/** A new datasource's settings as Grafana's datasource page hands them over. */
const NEW_SETTINGS: Settings = {
  id: 1,
  uid: instanceSettings.uid,
  orgId: 1,
  name: 'Jobsight',
  type: instanceSettings.type,
  typeName: 'Jobsight',
  typeLogoUrl: '',
  access: 'proxy',
  url: '',
  user: '',
  database: '',
  basicAuth: false,
  basicAuthUser: '',
  isDefault: false,
  withCredentials: false,
  readOnly: false,
  jsonData: {},
  secureJsonFields: {},
  version: 1,
};

function ConfigSection() {
  const [options, setOptions] = useState<Settings>({ ...NEW_SETTINGS, ...init.options });
  return (
    <section data-testid="config-editor" aria-label="ConfigEditor">
      <h2>ConfigEditor</h2>
      <ConfigEditor
        options={options}
        onOptionsChange={(next) => {
          emit('config', 'onOptionsChange', next);
          setOptions(next);
        }}
      />
      <h3>Latest options</h3>
      <pre data-testid="config-json">{JSON.stringify(options, null, 2)}</pre>
    </section>
  );
}

function QuerySection({ datasource }: { datasource: DataSource }) {
  // A new query: what Grafana's query editor row starts with.
  const [query, setQuery] = useState<JobsightQuery>(
    () =>
      init.query ?? {
        refId: 'A',
        datasource: { type: instanceSettings.type, uid: instanceSettings.uid },
        ...datasource.getDefaultQuery(CoreApp.PanelEditor),
      }
  );
  // Grafana runs the queries as they are once onChange has been handled.
  const latest = useRef(query);
  const [runs, setRuns] = useState(0);
  return (
    <section data-testid="query-editor" aria-label="QueryEditor">
      <h2>QueryEditor</h2>
      <QueryEditor
        datasource={datasource}
        query={query}
        app={CoreApp.PanelEditor}
        onChange={(next) => {
          emit('query', 'onChange', next);
          latest.current = next;
          setQuery(next);
        }}
        onRunQuery={() => {
          emit('query', 'onRunQuery', latest.current);
          setRuns((n) => n + 1);
        }}
      />
      <h3>Latest query</h3>
      <pre data-testid="query-json">{JSON.stringify(query, null, 2)}</pre>
      <p>
        Runs: <output data-testid="query-runs">{runs}</output>
      </p>
    </section>
  );
}

function VariableSection({ datasource }: { datasource: DataSource }) {
  const [query, setQuery] = useState<JobsightVariableQuery | string>(init.variableQuery ?? '');
  const [definition, setDefinition] = useState('');
  return (
    <section data-testid="variable-editor" aria-label="VariableQueryEditor">
      <h2>VariableQueryEditor</h2>
      <VariableQueryEditor
        datasource={datasource}
        query={query}
        onChange={(next, def) => {
          emit('variable', 'onChange', next, def);
          setQuery(next);
          setDefinition(def);
        }}
      />
      <h3>Latest variable query</h3>
      <pre data-testid="variable-json">{JSON.stringify(query, null, 2)}</pre>
      <p>
        Definition: <output data-testid="variable-definition">{definition}</output>
      </p>
    </section>
  );
}

function Page() {
  const datasource = useMemo(() => fakeDataSource(init.optionLists ?? OPTION_LISTS, w.__resourceCalls), []);
  useEffect(() => {
    w.__ready = true;
  }, []);
  return (
    <ThemeContext.Provider value={theme}>
      <GlobalStyles />
      <main style={{ padding: theme.spacing(2), display: 'grid', gap: theme.spacing(4) }}>
        <h1>Jobsight editors (host page; no Grafana server, fake backend)</h1>
        <ConfigSection />
        <QuerySection datasource={datasource} />
        <VariableSection datasource={datasource} />
      </main>
    </ThemeContext.Provider>
  );
}

const root = document.getElementById('root');
if (!root) {
  throw new Error('no #root element');
}
document.body.dataset.theme = theme.colors.mode;
createRoot(root).render(<Page />);

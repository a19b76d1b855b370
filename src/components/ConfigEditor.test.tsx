import React, { useState } from 'react';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { DataSourceSettings } from '@grafana/data';

import jsonDataExample from '../../pkg/models/testdata/jsondata.json';
import { JobsightOptions, JobsightSecureJsonData } from '../types';
import { ConfigEditor } from './ConfigEditor';

type Settings = DataSourceSettings<JobsightOptions, JobsightSecureJsonData>;

function settings(change: Partial<Settings> = {}): Settings {
  return {
    id: 1,
    uid: 'jobsight',
    orgId: 1,
    name: 'Jobsight',
    type: 'jobsight-slurm-datasource',
    typeName: 'Jobsight',
    typeLogoUrl: '',
    access: 'proxy',
    url: '',
    user: '',
    // Deprecated, still part of the settings Grafana hands over.
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    database: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    withCredentials: false,
    readOnly: false,
    jsonData: {},
    secureJsonFields: {},
    ...change,
  };
}

let user: ReturnType<typeof userEvent.setup>;

beforeEach(() => {
  user = userEvent.setup({ delay: null });
});

/** Renders the editor with its settings kept as Grafana keeps them; returns the last settings sent. */
function setup(initial: Settings) {
  const onOptionsChange = jest.fn();
  function Harness() {
    const [options, setOptions] = useState(initial);
    return (
      <ConfigEditor
        options={options}
        onOptionsChange={(next) => {
          onOptionsChange(next);
          setOptions(next);
        }}
      />
    );
  }
  const view = render(<Harness />);
  return { view, onOptionsChange, last: (): Settings => onOptionsChange.mock.lastCall[0] };
}

describe('ConfigEditor secrets', () => {
  it('shows only that a secret is configured, never a value', () => {
    const { view } = setup(
      settings({
        jsonData: { elasticsearchUser: 'jobsight', prometheusUser: 'reader' },
        secureJsonFields: {
          elasticsearchPassword: true,
          prometheusPassword: true,
          prometheusBearerToken: true,
          allocationsToken: true,
        },
      })
    );
    for (const id of ['es-password', 'prom-password', 'prom-token', 'allocations-token']) {
      const input = view.container.querySelector<HTMLInputElement>(`#${id}`);
      expect(input).toHaveValue('configured');
      expect(input).toBeDisabled();
    }
    expect(screen.getAllByRole('button', { name: 'Reset' })).toHaveLength(4);
  });

  it('keeps the collector token a secret of its own', async () => {
    const { view, last } = setup(settings());
    const input = view.container.querySelector<HTMLInputElement>('#allocations-token')!;
    expect(input).toHaveAttribute('type', 'password');
    await user.type(input, 'cs-tok');
    expect(last().secureJsonData).toEqual({ allocationsToken: 'cs-tok' });
    expect(JSON.stringify(last().jsonData)).not.toContain('cs-tok');
  });

  it('keeps a typed secret in secureJsonData, masked, and out of jsonData', async () => {
    const { view, last } = setup(settings());
    const input = view.container.querySelector<HTMLInputElement>('#es-password')!;
    expect(input).toHaveAttribute('type', 'password');
    await user.type(input, 's3cr"et');
    expect(last().secureJsonData).toEqual({ elasticsearchPassword: 's3cr"et' });
    expect(JSON.stringify(last().jsonData)).not.toContain('s3cr');
  });

  it('resets a configured secret so a new one can be typed', async () => {
    const { view, last } = setup(settings({ secureJsonFields: { prometheusBearerToken: true } }));
    await user.click(screen.getByRole('button', { name: 'Reset' }));
    expect(last().secureJsonFields.prometheusBearerToken).toBe(false);
    expect(last().secureJsonData?.prometheusBearerToken).toBe('');
    const input = view.container.querySelector<HTMLInputElement>('#prom-token')!;
    expect(input).toBeEnabled();
    await user.type(input, 'tok');
    expect(last().secureJsonData?.prometheusBearerToken).toBe('tok');
  });
});

describe('ConfigEditor settings', () => {
  it('shows every setting of a full configuration', () => {
    setup(settings({ jsonData: jsonDataExample as JobsightOptions }));
    expect(screen.getByLabelText('URL *', { selector: '#es-url' })).toHaveValue('http://es.example:9200');
    expect(screen.getByLabelText('Job index')).toHaveValue('site-jobs');
    expect(screen.getByLabelText('Node index')).toHaveValue('site-nodes');
    expect(screen.getByLabelText('CA certificate')).toHaveValue(jsonDataExample.tlsCaCert);
    expect(screen.getByLabelText('Elasticsearch CA')).toHaveValue(jsonDataExample.elasticsearchTlsCaCert);
    expect(screen.getByLabelText('Prometheus CA')).toHaveValue(jsonDataExample.prometheusTlsCaCert);
    expect(screen.getByLabelText('Allocations URL CA')).toHaveValue(jsonDataExample.allocationsTlsCaCert);
    expect(screen.getByLabelText('Grafana keys CA')).toHaveValue(jsonDataExample.grafanaTlsCaCert);
    expect(screen.getByLabelText('Cluster filter')).toHaveValue('alpha');
    expect(screen.getByLabelText('Timeout (s)')).toHaveValue(45);
    expect(screen.getByLabelText('Max jobs')).toHaveValue(5000);
    expect(screen.getByLabelText('Max series')).toHaveValue(10000);
    expect(screen.getByText('Email local part')).toBeInTheDocument();
    expect(screen.getByLabelText('userMap key 1')).toHaveValue('grafana-admin');
    expect(screen.getByLabelText('userMap value 1')).toHaveValue('root');
    expect(screen.getByLabelText('accountPIs key 1')).toHaveValue('physics');
    expect(screen.getByLabelText('accountPIs value 1')).toHaveValue('alice');
    expect(screen.getByLabelText('Allocation 1 cluster')).toHaveValue('alpha');
    expect(screen.getByLabelText('Allocation 1 hours')).toHaveValue(8766);
    expect(screen.getByLabelText('Allocation 1 start')).toHaveValue('2026-01-01');
    expect(screen.getByLabelText('Allocations URL')).toHaveValue('http://collector.example:9310/constants');
    expect(screen.getByLabelText('Partition 1')).toHaveValue('alpha/gpu');
    expect(screen.getByLabelText('Partition 1 GPUs')).toHaveValue(32);
    expect(screen.getByLabelText('Job page URL')).toHaveValue(jsonDataExample.jobPageUrl);
    expect(screen.getByText("Grafana's signed ID token")).toBeInTheDocument();
    expect(screen.getByText('oauth_*')).toBeInTheDocument();
    expect(screen.getByLabelText('userIdMap key 1')).toHaveValue('user:42');
    expect(screen.getByLabelText('userIdMap value 1')).toHaveValue('bob');
    expect(screen.getByLabelText('Grafana URL')).toHaveValue('http://localhost:3000');
    expect(screen.getByLabelText('Forward ID token')).toBeChecked();
    expect(screen.getByLabelText('Tenant')).toHaveValue('team-a');
    expect(screen.getByLabelText('Tenant header')).toHaveValue('X-Scope-OrgID');
  });

  it('sets the Prometheus tenant and its header, and removes them when emptied', async () => {
    const { last } = setup(settings());
    expect(screen.getByLabelText('Tenant header')).toHaveAttribute('placeholder', 'X-Scope-OrgID');
    await user.type(screen.getByLabelText('Tenant'), 'team-a');
    await user.type(screen.getByLabelText('Tenant header'), 'THANOS-TENANT');
    expect(last().jsonData).toEqual({ prometheusTenant: 'team-a', prometheusTenantHeader: 'THANOS-TENANT' });
    await user.clear(screen.getByLabelText('Tenant header'));
    await user.clear(screen.getByLabelText('Tenant'));
    expect(last().jsonData).toEqual({});
  });

  it('sets text and number settings, and removes emptied ones', async () => {
    const { last } = setup(settings({ jsonData: { clusterFilter: 'alpha' } }));
    await user.type(screen.getByLabelText('URL *', { selector: '#prom-url' }), 'http://prom:9090');
    await user.type(screen.getByLabelText('Max jobs'), '5000');
    await user.clear(screen.getByLabelText('Cluster filter'));
    await user.tab();
    expect(last().jsonData).toEqual({ prometheusUrl: 'http://prom:9090', maxJobs: 5000 });
  });

  it('sets the user mapping', async () => {
    const { last } = setup(settings());
    await user.click(screen.getByLabelText('User mapping'));
    await user.click(screen.getByText('Email'));
    expect(last().jsonData.userMapping).toBe('email');
  });

  it('edits the user map and the account PIs', async () => {
    const { last } = setup(settings());
    await user.click(screen.getByRole('button', { name: 'Add user' }));
    await user.type(screen.getByLabelText('userMap key 1'), 'jdoe@example.org');
    await user.type(screen.getByLabelText('userMap value 1'), 'jdoe');
    await user.click(screen.getByRole('button', { name: 'Add account' }));
    await user.type(screen.getByLabelText('accountPIs key 1'), 'physics');
    await user.type(screen.getByLabelText('accountPIs value 1'), 'alice, bob,');
    expect(last().jsonData).toEqual({
      userMap: { 'jdoe@example.org': 'jdoe' },
      accountPIs: { physics: ['alice', 'bob'] },
    });
    await user.click(screen.getByLabelText('Remove userMap row 1'));
    expect(last().jsonData).toEqual({ accountPIs: { physics: ['alice', 'bob'] } });
  });

  it('sets the identity source and maps a user id', async () => {
    const { last } = setup(settings());
    await user.click(screen.getByLabelText('Identity source'));
    await user.click(screen.getByText('Unverified login (unsafe)'));
    expect(last().jsonData.identitySource).toBe('unverifiedLogin');
    await user.click(screen.getByRole('button', { name: 'Add user id' }));
    await user.type(screen.getByLabelText('userIdMap key 1'), 'user:7');
    await user.type(screen.getByLabelText('userIdMap value 1'), 'carol');
    expect(last().jsonData.userIdMap).toEqual({ 'user:7': 'carol' });
  });

  it('narrows the full-access roles to Admin', async () => {
    const { last } = setup(settings());
    const roles = screen.getByLabelText('Full-access roles');
    await user.type(roles, '{backspace}');
    expect(last().jsonData.fullAccessRoles).toEqual(['Admin']);
  });

  it('adds an allocation', async () => {
    const { last } = setup(settings());
    await user.click(screen.getByRole('button', { name: 'Add allocation' }));
    await user.type(screen.getByLabelText('Allocation 1 cluster'), 'alpha');
    await user.type(screen.getByLabelText('Allocation 1 account'), 'physics');
    await user.type(screen.getByLabelText('Allocation 1 hours'), '8766');
    await user.type(screen.getByLabelText('Allocation 1 period days'), '365');
    await user.type(screen.getByLabelText('Allocation 1 start'), '2026-01-01');
    await user.click(screen.getByLabelText('Allocation 1 resource'));
    await user.click(screen.getByText('CPU'));
    expect(last().jsonData.allocations).toEqual([
      { cluster: 'alpha', account: 'physics', resource: 'cpu', hours: 8766, periodDays: 365, start: '2026-01-01' },
    ]);
    await user.click(screen.getByLabelText('Remove allocation 1'));
    expect(last().jsonData).not.toHaveProperty('allocations');
  });

  it('adds a partition capacity', async () => {
    const { last } = setup(settings());
    await user.click(screen.getByRole('button', { name: 'Add partition' }));
    await user.type(screen.getByLabelText('Partition 1'), 'alpha/gpu');
    await user.type(screen.getByLabelText('Partition 1 CPUs'), '512');
    await user.type(screen.getByLabelText('Partition 1 GPUs'), '32');
    await user.tab();
    expect(last().jsonData.partitionCapacity).toEqual({ 'alpha/gpu': { cpus: 512, gpus: 32 } });
  });

  // TLS trust per backend (docs/datasource.md, "TLS trust"): plain jsonData,
  // each field into its own key; emptying one removes it (the system's CAs
  // and tlsCaCert alone, or for Grafana's keys the system's alone).
  it.each([
    ['Elasticsearch CA', 'elasticsearchTlsCaCert'],
    ['Prometheus CA', 'prometheusTlsCaCert'],
    ['Allocations URL CA', 'allocationsTlsCaCert'],
    ['Grafana keys CA', 'grafanaTlsCaCert'],
  ] as const)('sets %s into jsonData.%s only, and removes it when emptied', async (label, key) => {
    const site = '-----BEGIN CERTIFICATE-----\nSITE\n-----END CERTIFICATE-----';
    const { last } = setup(settings({ jsonData: { tlsCaCert: site } }));
    const field = screen.getByLabelText(label);
    expect(field.tagName).toBe('TEXTAREA');
    expect(field).toHaveValue('');
    const pem = `-----BEGIN CERTIFICATE-----{enter}${key}{enter}-----END CERTIFICATE-----`;
    await user.type(field, pem);
    const want = `-----BEGIN CERTIFICATE-----\n${key}\n-----END CERTIFICATE-----`;
    expect(last().jsonData).toEqual({ tlsCaCert: site, [key]: want });
    expect(last().secureJsonData).toBeUndefined();
    expect(screen.getByLabelText('CA certificate')).toHaveValue(site);
    await user.clear(field);
    expect(last().jsonData).toEqual({ tlsCaCert: site });
  });

  it('shows each stored CA bundle in its own field', () => {
    setup(
      settings({
        jsonData: {
          elasticsearchTlsCaCert: 'es-ca',
          prometheusTlsCaCert: 'prom-ca',
          allocationsTlsCaCert: 'alloc-ca',
          grafanaTlsCaCert: 'grafana-ca',
        },
      })
    );
    expect(screen.getByLabelText('CA certificate')).toHaveValue('');
    expect(screen.getByLabelText('Elasticsearch CA')).toHaveValue('es-ca');
    expect(screen.getByLabelText('Prometheus CA')).toHaveValue('prom-ca');
    expect(screen.getByLabelText('Allocations URL CA')).toHaveValue('alloc-ca');
    expect(screen.getByLabelText('Grafana keys CA')).toHaveValue('grafana-ca');
  });

  it('sets the TLS CA certificate', async () => {
    const { last } = setup(settings());
    const pem = '-----BEGIN CERTIFICATE-----';
    await user.type(screen.getByLabelText('CA certificate'), pem);
    expect(last().jsonData.tlsCaCert).toBe(pem);
    expect(within(document.body).queryByText(/undefined/)).toBeNull();
  });
});

// Compile-time check that the TypeScript models (src/types.ts) have exactly
// the keys of the Go models (pkg/models). The examples under
// pkg/models/testdata are decoded strictly by the Go tests (which also check
// that every Go field appears in them); here `npm run typecheck` fails when a
// key exists on one side only. Nothing here is bundled.
import { DataSourceJsonData } from '@grafana/data';
import type { DataQuery } from '@grafana/schema';

import jsonDataExample from '../pkg/models/testdata/jsondata.json';
import queryExample from '../pkg/models/testdata/query.json';
import { JobsightOptions, JobsightQuery } from './types';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

// queryType is declared by DataQuery too, but it is part of the Go model.
type QueryModelKeys = Exclude<keyof JobsightQuery, keyof DataQuery> | 'queryType';
type QueryExampleKeys = Exclude<keyof typeof queryExample, 'refId'>;
export const queryKeysMatch: Same<QueryModelKeys, QueryExampleKeys> = true;

type OptionsModelKeys = Exclude<keyof JobsightOptions, keyof DataSourceJsonData>;
type OptionsExampleKeys = keyof typeof jsonDataExample;
export const optionsKeysMatch: Same<OptionsModelKeys, OptionsExampleKeys> = true;

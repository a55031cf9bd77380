// The JSON Schemas `describe` returns. A component reads no files, so they live in a module;
// the input's `examples` are what `caseload plugin check` runs.

export const INPUT = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: '{{name}} input',
  type: 'object',
  required: ['numbers'],
  properties: { numbers: { type: 'array', items: { type: 'number' } } },
  additionalProperties: false,
  examples: [{ numbers: [8, 7, 6, 5, 4] }],
};

export const OUTPUT = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: '{{name}} output',
  type: 'object',
  'x-caseload-objective': { pointer: '/difference', sense: 'minimize' },
  'x-caseload-view': {
    kind: 'bars',
    values: { input: '/numbers' },
    groups: '/sides',
    value: '/difference',
  },
  required: ['sides', 'difference'],
  properties: {
    sides: { type: 'array', items: { enum: [0, 1] } },
    difference: { type: 'number', minimum: 0 },
  },
  additionalProperties: false,
};

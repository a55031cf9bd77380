// {{name}}: a caseload use case in JavaScript. `caseload plugin build` makes the component
// (componentize-js); `caseload plugin watch .` rebuilds, checks and publishes it on every
// change.
//
// `useCase` is the world's exported interface `use-case`, its functions and record fields in
// camelCase. A `result` returns its value, or throws its error: a list of violations
// ({pointer, message}) from `decode` and `validate`, a plugin-error variant from `run`
// ({tag: 'invalid-input', val: [...]} or {tag: 'failed', val: 'message'}). u64 values
// (`options.seed`, `options.timeLimitMs`) arrive as BigInt.

import { cancelled, progress } from 'caseload:plugin/host@0.2.2';

import { INPUT, OUTPUT } from './schemas.js';

export const useCase = {
  describe() {
    return {
      name: '{{name}}',
      version: '0.1.0',
      aliases: [],
      description:
        'Splits numbers into two sides with sums as close as possible (largest first, greedy).',
      inputSchema: JSON.stringify(INPUT),
      outputSchema: JSON.stringify(OUTPUT),
      mediaTypes: ['application/json'],
    };
  },

  decode(mediaType, data) {
    // Only JSON datasets, which the host reads itself.
    throw [{ pointer: '', message: `cannot read ${mediaType} files` }];
  },

  // What the schema cannot say; runs at submission, so a client hears of it as a 422.
  validate(input) {
    const { numbers } = JSON.parse(input);
    const negative = numbers.flatMap((number, at) =>
      number < 0 ? [{ pointer: `/numbers/${at}`, message: 'must not be negative' }] : [],
    );
    if (negative.length > 0) {
      throw negative;
    }
  },

  run(input, options) {
    const { numbers } = JSON.parse(input);
    const order = numbers.map((_, index) => index).sort((a, b) => numbers[b] - numbers[a]);
    const sides = new Array(numbers.length).fill(0);
    const sums = [0, 0];
    order.forEach((index, done) => {
      const side = sums[1] < sums[0] ? 1 : 0;
      sides[index] = side;
      sums[side] += numbers[index];
      if (done % 1024 === 0) {
        if (cancelled()) {
          throw { tag: 'failed', val: 'cancelled' };
        }
        progress(done / order.length, '');
      }
    });
    return JSON.stringify({ sides, difference: Math.abs(sums[0] - sums[1]) });
  },
};

// `evaluator` is the world's exported interface `evaluator`: it scores a given solution
// without searching (POST /problem/{{name}}/evaluate), the objective `run` would report for
// it and each rule it breaks. A use case that does not score solutions throws
// { tag: 'unsupported' }; a solution it cannot read, { tag: 'invalid', val: [...] }.
export const evaluator = {
  evaluate(input, solution) {
    const { numbers } = JSON.parse(input);
    let sides;
    try {
      ({ sides } = JSON.parse(solution));
    } catch (error) {
      throw { tag: 'invalid', val: [{ pointer: '/solution', message: String(error) }] };
    }
    if (
      !Array.isArray(sides) ||
      sides.length !== numbers.length ||
      sides.some((side) => side !== 0 && side !== 1)
    ) {
      const message = `give sides: 0 or 1 for each of the ${numbers.length} numbers`;
      throw { tag: 'invalid', val: [{ pointer: '/solution/sides', message }] };
    }
    const sums = [0, 0];
    numbers.forEach((number, index) => {
      sums[sides[index]] += number;
    });
    return {
      objective: Math.abs(sums[0] - sums[1]),
      feasible: true,
      violations: [],
      details: JSON.stringify({ sums }),
    };
  },
};

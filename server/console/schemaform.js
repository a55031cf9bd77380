// A form made from a use case's input JSON Schema: objects as groups of fields, arrays as
// rows (an array of plain values, or a tuple such as an edge [i, j, w], is one text field of
// comma-separated values), numbers, strings, enums and booleans as their controls, and
// anything else as a small JSON field. Where the schema offers alternative forms (`oneOf`
// or `anyOf` branches that require different fields, as max-cut's matrix or edge list), a
// selector picks one. The form edits a plain JSON value and reports every change, so that
// a JSON editor beside it stays in step; `set(value)` shows a value edited elsewhere.

import { h } from './dom.js';

// Arrays longer than this are shown as a count: the JSON editor is the place for them.
const MAX_ROWS = 200;

// `schemaForm(schema, { id, onChange })` answers { element, set(value, only) }: `only`, if
// given, lists the properties to show (a dataset launch shows its parameters alone).
export function schemaForm(root, { id, onChange }) {
  let only = null;
  const element = h('div', { class: 'schema-form' });
  let value = {};
  // The id of the control to focus after a re-render (a row added or removed).
  let focusAfter = null;

  const resolve = (schema) => {
    let resolved = schema;
    for (let depth = 0; depth < 16 && resolved && typeof resolved === 'object' && typeof resolved.$ref === 'string'; depth += 1) {
      const reference = resolved.$ref;
      if (!reference.startsWith('#')) break;
      resolved = pointer(root, reference.slice(1));
    }
    if (resolved === true || resolved === undefined || resolved === null) return {};
    if (resolved === false) return { not: {} };
    return resolved;
  };

  function set(next, shown = null) {
    only = shown;
    value = next !== null && typeof next === 'object' && !Array.isArray(next) ? structuredClone(next) : {};
    render();
  }

  function changed(restructured = false) {
    if (restructured) render();
    onChange(structuredClone(value));
  }

  function render() {
    const focused = focusAfter;
    focusAfter = null;
    element.replaceChildren(...objectFields(resolve(root), () => value, (next) => { value = next; }, id, true));
    if (focused) document.getElementById(focused)?.focus();
  }

  // The fields of an object schema; at the top, the form selector if it has alternatives.
  function objectFields(schema, get, put, path, top = false) {
    const properties = schema.properties ?? {};
    const required = new Set(schema.required ?? []);
    const parts = [];
    let names = Object.keys(properties);
    const branches = top && !only ? alternatives(schema) : [];
    if (branches.length > 1) {
      const current = get() ?? {};
      const chosen = chooseBranch(branches, current);
      const selectId = `${path}-form`;
      parts.push(h('div', { class: 'field' },
        h('label', { for: selectId }, 'Form'),
        h('select', { id: selectId, onchange: (event) => {
          const next = branches[Number(event.target.value)];
          const kept = {};
          for (const [name, item] of Object.entries(get() ?? {})) if (next.names.includes(name)) kept[name] = item;
          for (const name of next.required) if (!(name in kept)) kept[name] = defaultOf(resolve(properties[name]));
          put(kept);
          focusAfter = selectId;
          changed(true);
        } }, branches.map((branch, index) => h('option', { value: String(index), selected: branch === chosen }, branch.title)))));
      names = chosen.names;
      chosen.required.forEach((name) => required.add(name));
    }
    if (only) names = names.filter((name) => only.includes(name));
    // Required fields first, in the order the schema requires them (a server may send a
    // schema's properties in any order).
    const order = [...required];
    names = [...order.filter((name) => names.includes(name)), ...names.filter((name) => !required.has(name))];
    for (const name of names) {
      const child = resolve(properties[name]);
      const childPath = `${path}-${slug(name)}`;
      parts.push(control(child, name, () => (get() ?? {})[name], (next) => {
        const object = { ...(get() ?? {}) };
        if (next === undefined) delete object[name];
        else object[name] = next;
        put(object);
      }, childPath, required.has(name)));
    }
    return parts;
  }

  // The branches of `oneOf`/`anyOf` that tell forms apart by their required fields: each
  // with a title and the properties it shows.
  function alternatives(schema) {
    const listed = (schema.oneOf ?? schema.anyOf ?? []).map(resolve);
    if (listed.length < 2 || !listed.every((branch) => Array.isArray(branch.required))) return [];
    const all = Object.keys(schema.properties ?? {});
    return listed.map((branch, index) => {
      const others = listed.filter((_, at) => at !== index);
      const own = new Set(branch.required);
      // Fields another form names and this one does not require are the other form's.
      const theirs = new Set(others.flatMap((other) => [...other.required, ...Object.keys(other.properties ?? {})]));
      const names = branch.properties
        ? all.filter((name) => name in branch.properties)
        : all.filter((name) => own.has(name) || !theirs.has(name) || Object.keys(branch.properties ?? {}).includes(name));
      const distinct = branch.required.filter((name) => !(schema.required ?? []).includes(name));
      return { title: branch.title ?? `With ${distinct.join(', ') || 'defaults'}`, names, required: branch.required };
    });
  }

  function chooseBranch(branches, current) {
    return branches.find((branch) => branch.required.every((name) => name in current)) ?? branches[0];
  }

  // One property or array item: its label, control and description.
  function control(schema, name, get, put, path, required) {
    const kind = kindOf(schema);
    const label = `${name}${required ? '' : ' (optional)'}`;
    const hint = schema.description ? h('p', { class: 'hint', id: `${path}-hint` }, schema.description) : null;
    const described = hint ? `${path}-hint` : null;
    if (kind === 'object') {
      const present = get() !== undefined;
      if (!present && !required) {
        return h('div', { class: 'field' }, h('span', { class: 'field-name' }, name), hint,
          h('button', { type: 'button', id: `${path}-add`, onclick: () => {
            put(defaultOf(schema));
            changed(true);
          } }, `Add ${name}`));
      }
      return h('fieldset', { class: 'schema-object' }, h('legend', {}, label), hint,
        objectFields(schema, () => get() ?? {}, put, path));
    }
    if (kind === 'array' && !scalarRow(schema)) return rows(schema, name, label, get, put, path, required, hint);
    return h('div', { class: 'field' }, h('label', { for: path }, label),
      input(schema, kind, get, put, path, required, described), hint);
  }

  // An array of rows: each row a control of its own, removable; a button adds one.
  function rows(schema, name, label, get, put, path, required, hint) {
    const items = get();
    const itemSchema = resolve(schema.items);
    const group = h('fieldset', { class: 'schema-rows' }, h('legend', {}, label), hint);
    if (!Array.isArray(items)) {
      group.append(h('button', { type: 'button', id: `${path}-add`, onclick: () => {
        put([defaultOf(itemSchema)]);
        focusAfter = `${path}-0`;
        changed(true);
      } }, `Add ${name}`));
      return group;
    }
    if (items.length > MAX_ROWS) {
      group.append(h('p', { class: 'hint' }, `${items.length} rows: edit them in the JSON editor.`));
      return group;
    }
    const list = h('ol', { class: 'rows' });
    items.forEach((_, index) => {
      const rowPath = `${path}-${index}`;
      const rowGet = () => (get() ?? [])[index];
      const rowPut = (next) => {
        const array = [...(get() ?? [])];
        array[index] = next === undefined ? defaultOf(itemSchema) : next;
        put(array);
      };
      const kind = kindOf(itemSchema);
      const body = kind === 'object'
        ? h('fieldset', { class: 'schema-object' }, h('legend', {}, `${name} ${index + 1}`), objectFields(itemSchema, () => rowGet() ?? {}, rowPut, rowPath))
        : [h('label', { for: rowPath, class: 'visually-hidden' }, `${name} ${index + 1}`), input(itemSchema, kind, rowGet, rowPut, rowPath, true, null)];
      list.append(h('li', {}, body, h('button', { type: 'button', class: 'remove', 'aria-label': `Remove ${name} ${index + 1}`, onclick: () => {
        const array = [...(get() ?? [])];
        array.splice(index, 1);
        put(array.length === 0 && !required ? undefined : array);
        focusAfter = array.length ? `${path}-${Math.min(index, array.length - 1)}` : `${path}-add-row`;
        changed(true);
      } }, 'Remove')));
    });
    group.append(list, h('button', { type: 'button', id: `${path}-add-row`, onclick: () => {
      put([...(get() ?? []), defaultOf(itemSchema)]);
      focusAfter = `${path}-${items.length}`;
      changed(true);
    } }, `Add ${singular(name)}`));
    return group;
  }

  // A control for a value: a number, a text, a choice, a checkbox, a comma-separated row of
  // plain values, or JSON.
  function input(schema, kind, get, put, path, required, described) {
    const current = get();
    const invalid = (control, message) => {
      control.setAttribute('aria-invalid', message ? 'true' : 'false');
      control.title = message ?? '';
    };
    const common = { id: path, 'aria-describedby': described };
    switch (kind) {
      case 'integer':
      case 'number':
        return h('input', { ...common, type: 'number', step: kind === 'integer' ? '1' : 'any', min: schema.minimum, max: schema.maximum,
          required, value: typeof current === 'number' ? String(current) : '', oninput: (event) => {
            const text = event.target.value.trim();
            if (text === '') {
              put(undefined);
              invalid(event.target, null);
            } else if (Number.isFinite(Number(text)) && (kind === 'number' || Number.isInteger(Number(text)))) {
              put(Number(text));
              invalid(event.target, null);
            } else {
              invalid(event.target, kind === 'integer' ? 'a whole number' : 'a number');
              return;
            }
            changed();
          } });
      case 'boolean':
        if (required) {
          return h('input', { ...common, type: 'checkbox', checked: current === true, onchange: (event) => {
            put(event.target.checked);
            changed();
          } });
        }
        return choice(common, [true, false], current, put);
      case 'enum':
        return choice(common, schema.enum, current, required ? null : put, put);
      case 'const':
        return h('output', { ...common }, JSON.stringify(schema.const));
      case 'string':
        return h('input', { ...common, required, value: typeof current === 'string' ? current : '', minlength: schema.minLength, maxlength: schema.maxLength,
          oninput: (event) => {
            put(event.target.value === '' && !required ? undefined : event.target.value);
            changed();
          } });
      case 'array':
        return h('input', { ...common, class: 'row-values', autocomplete: 'off', spellcheck: 'false', inputmode: 'decimal',
          value: Array.isArray(current) ? current.map((item) => (typeof item === 'string' ? item : JSON.stringify(item))).join(', ') : '',
          placeholder: placeholderOf(schema), oninput: (event) => {
            const text = event.target.value.trim();
            if (text === '') {
              put(required ? [] : undefined);
              invalid(event.target, null);
              changed();
              return;
            }
            const parsed = parseRow(schema, text);
            if (parsed.error) {
              invalid(event.target, parsed.error);
              return;
            }
            invalid(event.target, null);
            put(parsed.value);
            changed();
          } });
      default:
        return h('textarea', { ...common, class: 'json-field', rows: '2', spellcheck: 'false',
          value: current === undefined ? '' : JSON.stringify(current), oninput: (event) => {
            const text = event.target.value.trim();
            if (text === '') {
              put(undefined);
              invalid(event.target, null);
              changed();
              return;
            }
            try {
              put(JSON.parse(text));
              invalid(event.target, null);
              changed();
            } catch (error) {
              invalid(event.target, `not JSON: ${error.message}`);
            }
          } });
    }
  }

  // A select of JSON values; with `clear`, an empty choice that removes the value.
  function choice(common, values, current, clear, put = clear) {
    const known = values.findIndex((item) => JSON.stringify(item) === JSON.stringify(current));
    return h('select', { ...common, onchange: (event) => {
      const index = event.target.value;
      put(index === '' ? undefined : values[Number(index)]);
      changed();
    } },
    clear || known < 0 ? h('option', { value: '', selected: known < 0 }, clear ? '(not set)' : '(choose)') : null,
    values.map((item, index) => h('option', { value: String(index), selected: index === known }, typeof item === 'string' ? item : JSON.stringify(item))));
  }

  // Plain values of an array (or a tuple's places) from "1, 0, -2".
  function parseRow(schema, text) {
    const tokens = text.split(',').map((token) => token.trim());
    const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems.map(resolve) : null;
    const parsed = [];
    for (const [index, token] of tokens.entries()) {
      const place = tuple ? (tuple[index] ?? resolve(schema.items)) : resolve(schema.items);
      const one = parseValue(place, token);
      if (one.error) return { error: `value ${index + 1}: ${one.error}` };
      parsed.push(one.value);
    }
    if (tuple && schema.minItems !== undefined && parsed.length < schema.minItems) return { error: `${schema.minItems} values` };
    if (schema.maxItems !== undefined && parsed.length > schema.maxItems) return { error: `at most ${schema.maxItems} values` };
    return { value: parsed };
  }

  function parseValue(schema, token) {
    switch (kindOf(schema)) {
      case 'integer':
        return Number.isInteger(Number(token)) && token !== '' ? { value: Number(token) } : { error: 'a whole number' };
      case 'number':
        return Number.isFinite(Number(token)) && token !== '' ? { value: Number(token) } : { error: 'a number' };
      case 'boolean':
        return token === 'true' || token === 'false' ? { value: token === 'true' } : { error: 'true or false' };
      case 'enum': {
        const found = schema.enum.find((item) => (typeof item === 'string' ? item : JSON.stringify(item)) === token);
        return found === undefined ? { error: `one of ${schema.enum.map((item) => JSON.stringify(item)).join(', ')}` } : { value: found };
      }
      case 'string':
        return { value: token };
      default:
        try {
          return { value: JSON.parse(token) };
        } catch {
          return { value: token };
        }
    }
  }

  function placeholderOf(schema) {
    const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems.map(resolve) : null;
    const places = tuple ?? [resolve(schema.items), resolve(schema.items)];
    return `${places.map((place) => String(defaultOf(place))).join(', ')}${tuple ? '' : ', …'}`;
  }

  // Whether an array is edited as one row of plain values: its items (or places) are not
  // objects or arrays.
  function scalarRow(schema) {
    const places = Array.isArray(schema.prefixItems) ? schema.prefixItems : [schema.items];
    return places.every((place) => ['integer', 'number', 'string', 'boolean', 'enum', 'any'].includes(kindOf(resolve(place)))
      && !(kindOf(resolve(place)) === 'any' && place !== undefined && place !== true));
  }

  function kindOf(schema) {
    const resolved = resolve(schema);
    if (Array.isArray(resolved.enum)) return 'enum';
    if ('const' in resolved) return 'const';
    const type = Array.isArray(resolved.type) ? resolved.type.find((one) => one !== 'null') : resolved.type;
    if (type) return type;
    if (resolved.properties) return 'object';
    if (resolved.items || resolved.prefixItems) return 'array';
    return 'any';
  }

  // A new value for a schema: its default, else the simplest value it takes.
  function defaultOf(schema) {
    const resolved = resolve(schema);
    if ('default' in resolved) return structuredClone(resolved.default);
    switch (kindOf(resolved)) {
      case 'enum': return resolved.enum[0];
      case 'const': return resolved.const;
      case 'integer':
      case 'number': return Math.max(0, resolved.minimum ?? 0);
      case 'string': return '';
      case 'boolean': return false;
      case 'array': return Array.isArray(resolved.prefixItems) ? resolved.prefixItems.map(defaultOf) : [];
      case 'object': return Object.fromEntries((resolved.required ?? []).map((name) => [name, defaultOf(resolved.properties?.[name])]));
      default: return null;
    }
  }

  return { element, set };
}

// Resolves a JSON pointer (RFC 6901) in a value; undefined where it leads nowhere.
function pointer(value, path) {
  if (path === '') return value;
  let here = value;
  for (const raw of path.slice(1).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (here === null || typeof here !== 'object') return undefined;
    here = here[key];
  }
  return here;
}

function slug(name) {
  return String(name).replace(/[^A-Za-z0-9_-]/g, '_');
}

function singular(name) {
  if (name.endsWith('ices')) return `${name.slice(0, -4)}ex`;
  if (name.endsWith('s')) return name.slice(0, -1);
  return `${name} row`;
}

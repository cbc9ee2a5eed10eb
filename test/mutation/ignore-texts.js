import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin';

const TEXT_KEYS = new Set(['description', 'meta', 'where', 'whose']);

/** The name of a property's key, when it is written plainly. */
function keyName(node) {
  if (node.computed) return undefined;
  if (node.key.type === 'Identifier') return node.key.name;
  if (node.key.type === 'StringLiteral') return node.key.value;
  return undefined;
}

/** Whether `path` is the object passed to a `setup(...)` or `.createMachine(...)` call. */
function isMachineArgument(path, callee) {
  const call = path.parentPath;
  if (!path.isObjectExpression() || !call?.isCallExpression()) return false;
  const fn = call.node.callee;
  const name =
    fn.type === 'Identifier' ? fn.name : fn.type === 'MemberExpression' ? fn.property.name : undefined;
  return name === callee;
}

/**
 * A Stryker ignorer (`"ignorers": ["texts"]` in stryker.config.json): leaves unmutated what the
 * machines carry for the documents (`src/docs`) and the console and no behaviour reads:
 * - every `description:` and `meta:` property (and the ledger chart's `where:` and `whose:`), and
 *   every `...Texts` or `..._TEXTS` export: plain-language texts, which `npm run docs:check` guards;
 * - an object literal holding only such properties, as a state with texts only or the
 *   `{ description: '...' }` a transition builder takes: emptying it removes texts only;
 * - the machine's own `id`, its name in the documents;
 * - `setup({ types })`, which holds type declarations only (`{} as Context`).
 */
const textsIgnorer = {
  shouldIgnore(path) {
    if (
      path.isObjectExpression() &&
      path.node.properties.length > 0 &&
      path.node.properties.every((p) => p.type === 'ObjectProperty' && TEXT_KEYS.has(keyName(p)))
    ) {
      return 'an object of plain-language texts only';
    }
    if (path.isObjectProperty() || path.isObjectMethod()) {
      const name = keyName(path.node);
      if (TEXT_KEYS.has(name)) return `plain-language ${name} for the documents`;
      if (name === 'id' && isMachineArgument(path.parentPath, 'createMachine'))
        return 'the machine’s name in the documents';
      if (name === 'types' && isMachineArgument(path.parentPath, 'setup')) return 'type declarations only';
    }
    if (
      path.isVariableDeclarator() &&
      path.node.id.type === 'Identifier' &&
      /(Texts|_TEXTS)$/.test(path.node.id.name)
    ) {
      return 'plain-language texts for the documents';
    }
    return undefined;
  },
};

export const strykerPlugins = [declareValuePlugin(PluginKind.Ignore, 'texts', textsIgnorer)];

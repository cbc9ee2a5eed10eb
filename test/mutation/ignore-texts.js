import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin';

/**
 * A Stryker ignorer (`"ignorers": ["texts"]` in stryker.config.json): leaves unmutated the
 * plain-language texts the machines carry for the documents (`src/docs`) and the console, which
 * no behaviour reads: every `description:` and `meta:` property, and every `...Texts` export.
 * `npm run docs:check` is what guards those texts.
 */
const textsIgnorer = {
  shouldIgnore(path) {
    if ((path.isObjectProperty() || path.isObjectMethod()) && !path.node.computed) {
      const key = path.node.key;
      const name =
        key.type === 'Identifier' ? key.name : key.type === 'StringLiteral' ? key.value : undefined;
      if (name === 'description' || name === 'meta') return `plain-language ${name} for the documents`;
    }
    if (
      path.isVariableDeclarator() &&
      path.node.id.type === 'Identifier' &&
      /Texts$/.test(path.node.id.name)
    ) {
      return 'plain-language texts for the documents';
    }
    return undefined;
  },
};

export const strykerPlugins = [declareValuePlugin(PluginKind.Ignore, 'texts', textsIgnorer)];

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { REPO_ROOT } from '#src/docs/generate.ts';
import { appRouter } from '#src/router.ts';

/** The Markdown a reader of a clone follows: the README and every document under docs/. */
function documents(): string[] {
  const docs = (dir: string): string[] =>
    readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? docs(`${dir}/${e.name}`) : e.name.endsWith('.md') ? [`${dir}/${e.name}`] : [],
    );
  return ['README.md', ...docs('docs')];
}

/** Relative link targets of a Markdown text: `[text](target)`, without anchors. */
function relativeLinks(markdown: string): string[] {
  const targets = [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
  return targets
    .filter((t) => !/^[a-z]+:/i.test(t) && !t.startsWith('#'))
    .map((t) => decodeURI(t.split('#')[0] as string));
}

describe('documentation links', () => {
  it('every relative link of the README and docs/ resolves inside the repository', () => {
    const broken: string[] = [];
    for (const doc of documents()) {
      for (const target of relativeLinks(readFileSync(path.join(REPO_ROOT, doc), 'utf8'))) {
        const resolved = path.resolve(REPO_ROOT, path.dirname(doc), target);
        if (!resolved.startsWith(`${REPO_ROOT}${path.sep}`) || !existsSync(resolved))
          broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken).to.deep.equal([]);
  });

  it('the README leads to the merchant contract and the internal API in docs/, never outside the clone', () => {
    const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
    expect(relativeLinks(readme)).to.include.members(['docs/merchant-api.md', 'docs/internal-api.md']);
    expect(readme).to.not.include('../shared/');
  });

  it('docs/internal-api.md lists every procedure of the router', () => {
    const doc = readFileSync(path.join(REPO_ROOT, 'docs/internal-api.md'), 'utf8');
    const missing = Object.keys(appRouter._def.procedures).filter((p) => !doc.includes(`| \`${p}\` |`));
    expect(missing).to.deep.equal([]);
  });
});

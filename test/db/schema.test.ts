import { expect } from 'chai';
import { harness } from '../harness.ts';

describe('database schema', () => {
  it('is exactly what the entities describe once the committed migrations ran', async () => {
    const diff = await harness().service.deps.orm.schema.getUpdateSchemaSQL({ wrap: false, safe: false });
    expect(diff.trim()).to.equal('');
  });
});

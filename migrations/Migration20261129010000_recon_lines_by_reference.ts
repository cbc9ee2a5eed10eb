import { Migration } from '@mikro-orm/migrations';

/**
 * A reconciliation run pairs again, by reference, whatever its day's comparison did not match
 * (src/reconciliation/match.ts): the rail's kept lines are found by reference through an index.
 */
export class Migration20261129010000_recon_lines_by_reference extends Migration {
  override name = 'Migration20261129010000_recon_lines_by_reference';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "recon_rail_lines_reference_index" on "recon_rail_lines" ("rail", "reference");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "recon_rail_lines_reference_index";`);
  }
}

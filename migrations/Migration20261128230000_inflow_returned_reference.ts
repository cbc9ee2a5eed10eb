import { Migration } from '@mikro-orm/migrations';

/**
 * A RETURNED inflow keeps its evidence: the bank reference or transaction hash of the return the
 * operator made outside the service (`inflow return --reference`). Inflows returned before keep
 * null; their proposal's note says how.
 */
export class Migration20261128230000_inflow_returned_reference extends Migration {
  override name = 'Migration20261128230000_inflow_returned_reference';

  override up(): void | Promise<void> {
    this.addSql(`alter table "inflows" add column "returned_reference" varchar(200) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "inflows" drop column "returned_reference";`);
  }
}

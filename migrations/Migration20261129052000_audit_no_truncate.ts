import { Migration } from '@mikro-orm/migrations';

/**
 * The audit trail refuses TRUNCATE too, as the ledger's entries do: it is never dropped from
 * (docs/scaling.md, "Partitioned tables"). A statement trigger fires only on the table a statement
 * names, so `partition_guard()` copies it onto every monthly partition, here and in the
 * `retention` job.
 */
export class Migration20261129052000_audit_no_truncate extends Migration {
  override name = 'Migration20261129052000_audit_no_truncate';

  override up(): void | Promise<void> {
    this.addSql(
      `create trigger "audit_no_truncate" before truncate on "audit" for each statement execute function "audit_audit_immutable_fn"();`,
    );
    this.addSql(`select partition_guard('audit');`);
  }

  override down(): void | Promise<void> {
    this.addSql(`do $$
declare r record;
begin
  for r in select tgrelid::regclass as rel from pg_trigger where tgname = 'audit_no_truncate' loop
    execute format('drop trigger audit_no_truncate on %s', r.rel);
  end loop;
end $$;`);
  }
}

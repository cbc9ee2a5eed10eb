import { Migration } from '@mikro-orm/migrations';

export class Migration20261122071159_task_generation extends Migration {
  override name = 'Migration20261122071159_task_generation';

  override up(): void | Promise<void> {
    this.addSql(`alter table "tasks" add "generation" int not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "tasks" drop column "generation";`);
  }
}

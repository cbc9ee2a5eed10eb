import type { Config } from '#src/config.ts';
import type { Corridors } from '#src/corridors/corridors.ts';
import { buildComplianceModel, type ComplianceModel } from '#src/docs/compliance.ts';
import { MACHINE_DOCS } from '#src/docs/registry.ts';

const models = new WeakMap<Config, ComplianceModel>();

/** The compliance view with the thresholds and fees this service runs with (built once per configuration). */
export function complianceModelOf(config: Config, corridors: Corridors): ComplianceModel {
  let model = models.get(config);
  if (!model) {
    model = buildComplianceModel(MACHINE_DOCS, config, corridors).model;
    models.set(config, model);
  }
  return model;
}

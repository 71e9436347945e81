// The shape of one migration embedded in the binary (scripts/embed-migrations.ts writes one module per dialect).

export interface EmbeddedMigration {
  readonly name: string;
  readonly hash: string;
  readonly statements: readonly string[];
}

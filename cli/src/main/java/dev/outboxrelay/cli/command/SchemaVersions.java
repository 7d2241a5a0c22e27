package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import java.util.regex.Pattern;
import org.flywaydb.core.api.MigrationVersion;

/**
 * A schema version typed on the command line ({@code migrate --target}, {@code schema-sql
 * --after-version}): plain numbers only. Flyway's own parser also takes its special words ({@code
 * current}, {@code latest}, {@code next}), which name no shipped migration.
 */
final class SchemaVersions {
  private static final Pattern NUMERIC = Pattern.compile("\\d+(\\.\\d+)*");

  private SchemaVersions() {}

  /**
   * The version typed for {@code option}, at most the latest one this CLI ships. A usage error
   * otherwise, which names the option but never repeats the value typed.
   */
  static MigrationVersion parse(String option, String value) {
    if (!NUMERIC.matcher(value).matches()) {
      throw CliException.usage(option + " must be a schema version such as 2");
    }
    MigrationVersion version = MigrationVersion.fromVersion(value); // digits and dots: parses
    if (version.isNewerThan(SchemaMigrator.CURRENT_VERSION)) {
      throw CliException.usage(
          option
              + " is newer than the latest version this CLI knows ("
              + SchemaMigrator.CURRENT_VERSION
              + ")");
    }
    return version;
  }
}

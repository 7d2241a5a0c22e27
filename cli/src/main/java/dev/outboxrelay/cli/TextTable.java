package dev.outboxrelay.cli;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A plain-text table with left-aligned columns, for human output. Cells must be {@link Text#safe}.
 * Columns are padded with spaces and a line ends after its last non-empty cell; a cell's own text
 * is never trimmed.
 */
public final class TextTable {
  private final List<String[]> rows = new ArrayList<>();
  private final int columns;

  public TextTable(String... headers) {
    this.columns = headers.length;
    rows.add(headers);
  }

  private TextTable(int columns) {
    this.columns = columns;
  }

  /** A table of label and value lines, without a header. */
  public static TextTable keyValue() {
    return new TextTable(2);
  }

  public TextTable row(Object... cells) {
    if (cells.length != columns) {
      throw new IllegalArgumentException("expected " + columns + " cells");
    }
    rows.add(Arrays.stream(cells).map(String::valueOf).toArray(String[]::new));
    return this;
  }

  public String render() {
    int[] widths = new int[columns];
    for (String[] row : rows) {
      for (int i = 0; i < columns; i++) {
        widths[i] = Math.max(widths[i], row[i].length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (String[] row : rows) {
      int end = out.length(); // after the last non-empty cell: only padding is dropped
      for (int i = 0; i < columns; i++) {
        out.append(row[i]);
        if (!row[i].isEmpty()) {
          end = out.length();
        }
        if (i < columns - 1) {
          out.append(" ".repeat(widths[i] - row[i].length() + 2));
        }
      }
      out.setLength(end);
      out.append('\n');
    }
    return out.toString();
  }
}

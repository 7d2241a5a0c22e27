package dev.outboxrelay.cli;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A plain-text table with left-aligned columns, for human output. Cells must be {@link Text#safe}.
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
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < columns; i++) {
        line.append(row[i]);
        if (i < columns - 1) {
          line.append(" ".repeat(widths[i] - row[i].length() + 2));
        }
      }
      out.append(line.toString().stripTrailing()).append('\n');
    }
    return out.toString();
  }
}

package dev.outboxrelay.localstack;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Just enough of a Dockerfile parser for the checks: global ARGs, stages, COPYs, CMD. */
record Dockerfile(Map<String, String> globalArgs, List<Stage> stages) {

  record Copy(String from, List<String> sources, String destination) {}

  record Stage(String baseImage, String name, List<Copy> copies, List<String> instructions) {
    List<String> instructions(String keyword) {
      return instructions.stream()
          .filter(i -> i.regionMatches(true, 0, keyword + " ", 0, keyword.length() + 1))
          .map(i -> i.substring(keyword.length() + 1).trim())
          .toList();
    }
  }

  private static final Pattern FROM =
      Pattern.compile("FROM\\s+(\\S+)(?:\\s+AS\\s+(\\S+))?", Pattern.CASE_INSENSITIVE);

  static Dockerfile parse(String text) {
    Map<String, String> args = new LinkedHashMap<>();
    List<Stage> stages = new ArrayList<>();
    for (String line : logicalLines(text)) {
      Matcher from = FROM.matcher(line);
      if (from.matches()) {
        stages.add(new Stage(from.group(1), from.group(2), new ArrayList<>(), new ArrayList<>()));
      } else if (stages.isEmpty() && line.toUpperCase().startsWith("ARG ")) {
        String[] kv = line.substring(4).trim().split("=", 2);
        args.put(kv[0], kv.length > 1 ? kv[1] : null);
      } else if (!stages.isEmpty()) {
        Stage stage = stages.get(stages.size() - 1);
        stage.instructions().add(line);
        if (line.toUpperCase().startsWith("COPY ")) {
          stage.copies().add(copy(line.substring(5).trim()));
        }
      }
    }
    return new Dockerfile(args, stages);
  }

  Stage stage(String name) {
    return stages.stream()
        .filter(s -> name.equals(s.name()))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no stage " + name));
  }

  /** The image a FROM names, with global ARGs substituted. */
  String baseImage(Stage stage) {
    String image = stage.baseImage();
    for (Map.Entry<String, String> arg : globalArgs.entrySet()) {
      image = image.replace("${" + arg.getKey() + "}", String.valueOf(arg.getValue()));
    }
    return image;
  }

  private static Copy copy(String rest) {
    String from = null;
    List<String> words = new ArrayList<>(List.of(rest.split("\\s+")));
    while (words.get(0).startsWith("--")) {
      String flag = words.remove(0);
      if (flag.startsWith("--from=")) {
        from = flag.substring("--from=".length());
      }
    }
    String destination = words.remove(words.size() - 1);
    return new Copy(from, List.copyOf(words), destination);
  }

  private static List<String> logicalLines(String text) {
    List<String> lines = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    for (String raw : text.split("\n")) {
      String line = raw.strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      if (line.endsWith("\\")) {
        current.append(line, 0, line.length() - 1).append(' ');
      } else {
        lines.add(current.append(line).toString().trim());
        current.setLength(0);
      }
    }
    return lines;
  }
}

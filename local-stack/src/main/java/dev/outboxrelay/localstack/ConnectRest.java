package dev.outboxrelay.localstack;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;

/** The few Kafka Connect REST calls the launcher makes. */
final class ConnectRest {
  static final ObjectMapper JSON = new ObjectMapper();

  private final String baseUrl;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();

  ConnectRest(String baseUrl) {
    this.baseUrl = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) : baseUrl;
  }

  String baseUrl() {
    return baseUrl;
  }

  record Response(int status, String body) {
    boolean ok() {
      return status >= 200 && status < 300;
    }

    JsonNode json() {
      try {
        return JSON.readTree(body);
      } catch (IOException e) {
        throw new StackException("Connect answered with something that is not JSON: " + body, e);
      }
    }
  }

  /** Empty when nothing answers (not started yet, or gone). */
  Optional<Response> tryGet(String path) {
    try {
      return Optional.of(send(HttpRequest.newBuilder(uri(path)).GET()));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /**
   * How long a GET is tried again while Connect answers that it is rebalancing (409, or 500 "a
   * rebalance is expected", which a connector's config answers right after another connector was
   * created).
   */
  static final Duration REBALANCE_WAIT = Duration.ofSeconds(30);

  JsonNode get(String path) {
    long deadline = System.nanoTime() + REBALANCE_WAIT.toNanos();
    Response response = tryGet(path).orElseThrow(() -> unreachable(path));
    while (isRebalancing(response) && System.nanoTime() < deadline) {
      pauseBeforeRetry();
      response = tryGet(path).orElseThrow(() -> unreachable(path));
    }
    if (!response.ok()) {
      throw new StackException(
          "GET " + path + " answered " + response.status() + ": " + response.body());
    }
    return response.json();
  }

  Response put(String path, JsonNode body) {
    try {
      return send(
          HttpRequest.newBuilder(uri(path))
              .header("Content-Type", "application/json")
              .PUT(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))));
    } catch (IOException e) {
      throw unreachable(path);
    }
  }

  static boolean isRebalancing(Response response) {
    return response.status() == 409
        || response.status() == 500 && response.body().contains("rebalance");
  }

  /** The launcher's own back-off between two questions to a rebalancing worker. */
  private static void pauseBeforeRetry() {
    try {
      Thread.sleep(250);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StackException("interrupted while Kafka Connect rebalanced", e);
    }
  }

  private Response send(HttpRequest.Builder request) throws IOException {
    try {
      HttpResponse<String> response =
          http.send(
              request.timeout(Duration.ofSeconds(30)).header("Accept", "application/json").build(),
              HttpResponse.BodyHandlers.ofString());
      return new Response(response.statusCode(), response.body());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }

  /**
   * {@code /connectors/<name><rest>}, the name encoded as a path segment: a name with a space or a
   * '/' made an invalid URI (a stack trace) or another path.
   */
  static String connectorPath(String name, String rest) {
    return "/connectors/"
        + java.net.URLEncoder.encode(name, java.nio.charset.StandardCharsets.UTF_8)
            .replace("+", "%20")
        + rest;
  }

  private URI uri(String path) {
    return URI.create(baseUrl + path);
  }

  private StackException unreachable(String path) {
    return new StackException("Kafka Connect does not answer at " + baseUrl + path);
  }
}

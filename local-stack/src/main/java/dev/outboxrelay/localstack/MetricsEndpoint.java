package dev.outboxrelay.localstack;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.SortedMap;

/**
 * The worker's Prometheus endpoint (the JMX exporter agent), read the way Prometheus scrapes it.
 */
final class MetricsEndpoint {
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  /** A scrape: the samples, or why there are none. */
  record Scrape(List<PrometheusText.Sample> samples, String failure) {
    boolean ok() {
      return failure == null;
    }

    SortedMap<String, RelayFigures> figures() {
      return RelayFigures.of(samples);
    }
  }

  private final String url;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();

  MetricsEndpoint(String url) {
    this.url = url;
  }

  String url() {
    return url;
  }

  /** Never throws: an endpoint that does not answer is a failure with the reason in one line. */
  Scrape scrape() {
    try {
      HttpResponse<String> response =
          http.send(
              HttpRequest.newBuilder(URI.create(url))
                  .timeout(TIMEOUT)
                  // The classic text format, not OpenMetrics: what PrometheusText reads.
                  .header("Accept", "text/plain; version=0.0.4")
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        return new Scrape(List.of(), "answered HTTP " + response.statusCode());
      }
      return new Scrape(PrometheusText.parse(response.body()), null);
    } catch (HttpTimeoutException e) {
      return new Scrape(List.of(), "no answer within " + TIMEOUT.toSeconds() + " s");
    } catch (java.net.ConnectException e) {
      return new Scrape(List.of(), "connection refused: is the Connect worker running?");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Scrape(List.of(), "interrupted");
    } catch (Exception e) {
      return new Scrape(
          List.of(), e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
    }
  }
}

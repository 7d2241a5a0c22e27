package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.mapping.MappingResult;
import dev.outboxrelay.mapping.RecordMapper;
import dev.outboxrelay.mapping.SourceOffsets;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Claims outbox rows under fenced leases, hands them to Connect as records and records each outcome
 * only while the lease still holds.
 *
 * <p>Threads: {@code poll()} claims and maps on the task thread; {@code commitRecord} runs on the
 * producer's I/O thread and only queues; the {@link OutcomeWriter} thread writes outcomes in
 * batches and renews leases. Nothing on the producer thread touches the database.
 */
public class OutboxSourceTask extends SourceTask {
  private static final Logger log = LoggerFactory.getLogger(OutboxSourceTask.class);
  static final String TASK_ID = TaskIdentity.TASK_ID;
  static final String TASK_COUNT = TaskIdentity.TASK_COUNT;
  static final String CONNECTOR_NAME = TaskIdentity.CONNECTOR_NAME;

  private final StoreProvider storeProvider;
  private final Time time;

  private OutboxSourceConfig config;
  private TaskSettings settings;
  private OutboxStore store;
  private RecordMapper mapper;
  private InFlightLedger ledger;
  private TaskRuntime runtime;
  private WakeSignal wake;
  private IdleBackoff idle;
  private RelayMetrics metrics;
  private Maintenance maintenance;
  private ClaimLoop claims;
  private boolean schemaReady;
  private volatile boolean stopping;
  private boolean stopped;

  public OutboxSourceTask() {
    this(new PostgresStoreProvider(), Time.SYSTEM);
  }

  OutboxSourceTask(StoreProvider storeProvider, Time time) {
    this.storeProvider = storeProvider;
    this.time = time;
  }

  @Override
  public String version() {
    return Version.get();
  }

  @Override
  public void start(Map<String, String> props) {
    try {
      config = new OutboxSourceConfig(props);
    } catch (ConfigException e) {
      throw new ConnectException("Invalid outbox-relay task configuration: " + e.getMessage());
    }
    TaskIdentity identity = TaskIdentity.from(props);
    String owner =
        LeaseOwners.newOwner(identity.connectorName(), Integer.toString(identity.index()));
    MDC.put("outbox.instance_keys", String.join(",", config.instanceKeys()));
    settings = TaskSettingsFactory.from(config, owner, identity.index(), identity.count());
    metrics = new RelayMetrics();
    metrics.register(() -> context.pluginMetrics());
    mapper = new RecordMapper(TaskSettingsFactory.mapping(config));
    wake = new WakeSignal();
    idle = new IdleBackoff(settings.pollInterval());
    store = storeProvider.open(config, "outbox-relay-" + identity.threadSuffix());
    runtime = new TaskRuntime(store, metrics, settings, time, wake, identity.threadSuffix());
    ledger = runtime.ledger();
    try {
      runtime.start();
      var notifications = storeProvider.notificationConnections(config);
      if (config.notifyEnabled() && notifications != null) {
        runtime.attach(
            new NotificationListener(
                notifications,
                config.table().notifyChannel(),
                config.instanceKeys(),
                wake,
                "outbox-relay-listener-" + identity.threadSuffix()));
      }
      maintenance = new Maintenance(store, config, metrics, time, identity.isFirst());
    } catch (RuntimeException | Error e) {
      stop(); // Connect may not call stop() for a task that failed to start
      throw e;
    }
    claims =
        new ClaimLoop(store, settings, ledger, runtime.renewer(), runtime.health(), metrics, time);
    log.info(
        "Started outbox-relay task {} as lease owner {} for instance keys {}",
        identity.index(),
        owner,
        config.instanceKeys());
  }

  @Override
  public List<SourceRecord> poll() {
    if (stopping) {
      return null;
    }
    runtime.renewer().taskPolled();
    OutboxStoreException fatal = runtime.health().fatalStoreError();
    if (fatal != null) {
      throw sanitizedFailure(fatal);
    }
    StoreHealth.Failure failure = runtime.failure();
    if (failure != null) {
      throw new ConnectException(failure.message());
    }
    try {
      ensureSchema();
      maintenance.runIfDue();
      List<SourceRecord> records = claimAndMap();
      if (records.isEmpty()) {
        wake.await(idle.nextWait());
        return null;
      }
      return records;
    } catch (OutboxStoreException e) {
      metrics.databaseErrors.incrementAndGet();
      if (e.isRetriable()) {
        claims.claimFailed();
        log.warn(
            "Database unavailable while claiming (reason={}, sqlState={}); will retry",
            e.reasonCode(),
            e.sqlState());
        wake.await(settings.pollInterval());
        throw new RetriableException("outbox-relay: " + e.getMessage());
      }
      throw sanitizedFailure(e);
    }
  }

  private void ensureSchema() {
    if (!schemaReady && config.migrateOnStart()) {
      storeProvider.migrate(config);
    }
    schemaReady = true;
  }

  private List<SourceRecord> claimAndMap() {
    ClaimResult result = claims.next();
    if (stopping) {
      result
          .claimed()
          .forEach(m -> runtime.submit(new PendingOutcome.Released(m.messageId(), m.lease())));
      return List.of();
    }
    if (!result.isEmpty()) {
      idle.claimedRows();
    }
    metrics.claimed.addAndGet(result.claimed().size());
    return map(result.claimed());
  }

  private List<SourceRecord> map(List<ClaimedMessage> claimed) {
    List<SourceRecord> records = new ArrayList<>(claimed.size());
    for (ClaimedMessage row : claimed) {
      MappingResult result = mapper.map(row);
      if (result instanceof MappingResult.Mapped mapped) {
        ledger.add(row, null);
        records.add(mapped.record());
      } else if (result instanceof MappingResult.Unpublishable bad) {
        log.warn(
            "Message cannot be published: message_id={} instance_key={} reason={}",
            row.messageId(),
            row.instanceKey(),
            bad.reasonCode());
        if (mapper.settings().hasDeadLetterTopic()) {
          ledger.add(row, bad.reasonCode());
          records.add(mapper.deadLetter(row, bad.reasonCode()));
        } else {
          ledger.add(row, bad.reasonCode());
          runtime.submit(
              new PendingOutcome.Failed(row.messageId(), row.lease(), bad.reasonCode(), false));
        }
      }
    }
    metrics.inFlight.set(ledger.size());
    return records;
  }

  @Override
  public void commitRecord(SourceRecord record, RecordMetadata metadata) {
    // Runs on the producer's I/O thread: identify the row, queue the outcome, return.
    String messageId;
    long token;
    try {
      messageId = SourceOffsets.messageId(record);
      token = SourceOffsets.leaseToken(record);
    } catch (IllegalArgumentException e) {
      log.warn("Acknowledgement for a record without an outbox source offset ignored");
      return;
    }
    Lease lease = new Lease(settings.owner(), token);
    PendingOutcome outcome;
    var entry = ledger.get(messageId);
    if (metadata == null) {
      outcome =
          new PendingOutcome.Unconfirmed(messageId, lease, PendingOutcome.Unconfirmed.NO_METADATA);
    } else if (!metadata.hasOffset()) {
      // acks=0: the producer sent it but nothing confirms it was written.
      outcome =
          new PendingOutcome.Unconfirmed(messageId, lease, PendingOutcome.Unconfirmed.NO_OFFSET);
    } else if (entry.isPresent() && entry.get().isDeadLetter()) {
      outcome = new PendingOutcome.Failed(messageId, lease, entry.get().deadLetterReason(), true);
    } else {
      outcome =
          new PendingOutcome.Published(
              messageId,
              lease,
              new KafkaCoordinates(metadata.topic(), metadata.partition(), metadata.offset()));
    }
    if (!runtime.submit(outcome)) {
      metrics.lateAcks.incrementAndGet();
      log.warn(
          "Acknowledgement arrived after the task stopped writing: message_id={}"
              + " (reason=LATE_ACK; the row is reclaimed after its lease expires)",
          messageId);
    }
  }

  @Override
  public void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    stopping = true;
    if (metrics != null) {
      // Now, not after the late-ack grace: a replacement instance of this task may start at once
      // and must be able to register the same metric names.
      metrics.unregister();
    }
    if (runtime != null) {
      runtime.stop(Duration.ofSeconds(2), settings.lateAckGrace());
    } else if (store != null) {
      store.close(); // the runtime was never built: nothing else holds the store
    }
  }

  private static ConnectException sanitizedFailure(OutboxStoreException e) {
    String hint =
        switch (e.kind()) {
          case AUTHENTICATION -> "; check connection.user and connection.password";
          case PERMISSION -> "; grant the connector's role access to the outbox table";
          case SCHEMA ->
              "; create the outbox table (schema.migrate.on.start=true, or docs/schema.sql)";
          default -> "";
        };
    // No cause attached: Connect shows the whole chain in the task's REST status.
    return new ConnectException("outbox-relay: " + e.getMessage() + hint);
  }

  /** For tests: this task's counters. */
  RelayMetrics metrics() {
    return metrics;
  }

  String owner() {
    return settings.owner();
  }
}

package dev.idem.store.redis;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.IdemConfigException;
import dev.idem.IdemException;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.Ttl;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.AsyncCommand;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.RedisCommand;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A {@link DedupStore} on Redis (standalone, Sentinel or Cluster), shared by every instance that
 * points at the same Redis and prefix. Each operation is one Lua script on one Redis key ({@code
 * <prefix><scope>:<key hex>}), so it is atomic and works on a cluster unchanged; batch forms send
 * all their scripts in one write and wait once (one round trip).
 *
 * <pre>{@code
 * try (RedisDedupStore store =
 *     RedisDedupStore.builder("redis://127.0.0.1:6379").prefix("idem:").build()) {
 *   Deduplicator dedup = ...; // give it the store
 * }
 * }</pre>
 *
 * <p><b>Semantics.</b> Exactly {@link DedupStateMachine}'s: the scripts judge leases and TTLs by
 * the caller's {@code nowMillis}, compare fencing tokens inside Redis, and set the key's Redis
 * expiry to the time left, so Redis frees expired entries by itself ({@link
 * StoreCapabilities#nativeExpiry()}). A duplicate hit with a sliding TTL restarts the key's expiry.
 *
 * <p><b>Failures fail closed.</b> While the connection is down, commands are rejected at once
 * (never queued for a later replay) with {@link StoreUnavailableException} whose {@code
 * outcomeUnknown} is false. A command that got no answer within {@link
 * RedisDedupStoreConfig#commandTimeout()} fails with {@code outcomeUnknown} true: it may have been
 * applied. A reserve ({@code reserve}, {@code reserveAll}, {@code reserveAsync}) that fails so is
 * undone: a release fenced by its own token follows it on the connection, unawaited, so an
 * in-flight entry it left does not block the key until the lease ends (the caller holds no
 * reservation); if the release cannot be sent, the lease heals the key. Any other settlement left
 * in flight is healed by its lease. The connection reconnects by itself.
 *
 * <p><b>Durability</b> is Redis's: committed keys survive this store's restart (a new store on the
 * same Redis and prefix sees them) and survive a Redis restart only as far as Redis persistence
 * (RDB/AOF) is configured. With asynchronous replication a failover can lose recently committed
 * keys. Run the dedup Redis with {@code maxmemory-policy noeviction}: an evicted committed key lets
 * a duplicate through. See {@code docs/stores/redis.md}.
 *
 * <p><b>Outbox.</b> The store is also an {@link OutboxStore} (for {@code deliver.mode: async}):
 * {@link #commitAndEnqueue} commits the key and appends the messages in one Lua script; each queue
 * keeps its entries under the hash tag {@code {queue}}, with a ready set that holds only the head
 * of each ordering key, so claims hand out one entry per ordering key at a time across every
 * instance sharing the Redis. On a Redis Cluster a script may touch one slot only, so the outbox
 * needs a prefix with a hash tag (e.g. {@code idem:{orders}:}): the dedup keys and the outbox then
 * live in one slot, on one shard. Without one, {@link #capabilities()} says no outbox and the
 * outbox methods refuse. See {@code docs/stores/redis.md} for the layout.
 *
 * <p>Thread-safe. Close it when done: it closes its connection, and shuts down the Lettuce client
 * if it created it (clients passed to {@link #builder(RedisClient)} stay open).
 */
public final class RedisDedupStore implements DedupStore, OutboxStore {
  private static final ByteArrayCodec CODEC = ByteArrayCodec.INSTANCE;
  private static final byte[] EMPTY = new byte[0];
  private static final byte[] ONE = {'1'};
  private static final byte[] ZERO = {'0'};

  /**
   * Deadlines further than this from now get no Redis expiry (they are kept until a later operation
   * finds them dead): Redis rejects expiries that overflow its clock.
   */
  private static final long MAX_EXPIRY_MILLIS = 100L * 366 * 24 * 3600 * 1000;

  private static final System.Logger LOG = System.getLogger(RedisDedupStore.class.getName());
  private static final long DURABILITY_RECHECK_NANOS = TimeUnit.MINUTES.toNanos(1);
  private static final ReserveResult.Replaced[] REPLACED = ReserveResult.Replaced.values();
  private static final StoreCapabilities WITH_OUTBOX =
      new StoreCapabilities(false, true, true, true);
  private static final StoreCapabilities WITHOUT_OUTBOX =
      new StoreCapabilities(false, true, true, false);

  private final RedisDedupStoreConfig config;
  private final String description;
  private final StatefulConnection<byte[], byte[]> connection;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;
  private final @Nullable AbstractRedisClient ownedClient;
  private final @Nullable ClientResources ownedResources;
  private final KeyLayout layout;
  private final @Nullable CompactLayout compact;
  private final long timeoutNanos;
  private final RedisOutbox outbox;
  private final StoreCapabilities capabilities;
  private volatile List<String> durabilityRisks = List.of();
  private volatile long durabilityCheckedNanos;
  private volatile boolean closed;

  private RedisDedupStore(
      RedisDedupStoreConfig config,
      String description,
      StatefulConnection<byte[], byte[]> connection,
      RedisClusterAsyncCommands<byte[], byte[]> commands,
      @Nullable AbstractRedisClient ownedClient,
      @Nullable ClientResources ownedResources) {
    this.config = config;
    this.description = description;
    this.connection = connection;
    this.commands = commands;
    this.ownedClient = ownedClient;
    this.ownedResources = ownedResources;
    this.layout = new KeyLayout(config.prefix());
    this.compact =
        config.layout() == RedisDedupStoreConfig.Layout.COMPACT
            ? new CompactLayout(config.prefix(), config.compactShards())
            : null;
    this.timeoutNanos = config.commandTimeout().toNanos();
    boolean cluster = connection instanceof StatefulRedisClusterConnection;
    this.outbox = new RedisOutbox(config.prefix(), cluster, this::runScript, description);
    // The compact layout packs keys in shard hashes that the outbox script does not write.
    this.capabilities =
        compact == null && RedisOutbox.supported(config.prefix(), cluster)
            ? WITH_OUTBOX
            : WITHOUT_OUTBOX;
  }

  /**
   * Starts a store that creates (and on close shuts down) its own Lettuce client.
   *
   * <p>One URI is a standalone server ({@code redis://[[user]:password@]host:port[/db]}, {@code
   * rediss://} for TLS, {@code redis-socket:///path}) or a Sentinel-managed master ({@code
   * redis-sentinel://[:password@]s1:26379[,s2:26379]/db#master}). Several URIs, or several
   * comma-separated hosts in one ({@code redis://:pw@h1:7000,h2:7001}), are the seeds of a Redis
   * Cluster; {@link Builder#cluster(boolean)} makes a single seed a cluster too. Passwords and TLS
   * settings pass through to Lettuce; the URI's own {@code timeout} is replaced by {@link
   * Builder#commandTimeout(Duration)}.
   *
   * @param uris one URI, or the cluster seeds
   * @return a builder
   */
  public static Builder builder(String... uris) {
    Objects.requireNonNull(uris, "uris");
    return new Builder(List.of(uris), null);
  }

  /**
   * Starts a store on a caller-owned standalone or Sentinel client (created with its URI, e.g.
   * {@code RedisClient.create("redis://...")}). {@link #close()} does not shut it down.
   *
   * <p>The client must fail closed: its {@link ClientOptions} need {@code
   * disconnectedBehavior(REJECT_COMMANDS)} and {@code autoReconnect(true)}, or {@link
   * Builder#build()} refuses it (a client that queues commands while disconnected would replay a
   * reserve long after the caller gave up on it).
   *
   * @param client the client
   * @return a builder
   */
  public static Builder builder(RedisClient client) {
    Objects.requireNonNull(client, "client");
    return new Builder(List.of(), client);
  }

  /**
   * Starts a store on a caller-owned cluster client. {@link #close()} does not shut it down. Its
   * options must fail closed, as for {@link #builder(RedisClient)}.
   *
   * @param client the cluster client
   * @return a builder
   */
  public static Builder builder(RedisClusterClient client) {
    Objects.requireNonNull(client, "client");
    return new Builder(List.of(), client);
  }

  @Override
  public ReserveResult reserve(ReserveRequest request) {
    ensureOpen();
    ScriptCall<List<Object>> call = reserveCall(request);
    connection.dispatch(call.prepare(true));
    try {
      awaitOne(call, "reserve");
    } catch (StoreUnavailableException e) {
      undoUnknownReserves(List.of(request), e);
      throw e;
    }
    return decodeReserve(call, request);
  }

  /**
   * After a reserve whose outcome is unknown (no answer within the command timeout, or the
   * connection lost after it was sent), sends a release with each request's own token, without
   * waiting for it: the caller holds no reservation, so an in-flight entry the reserve may have
   * left would otherwise block its key until the lease ends. The release follows the reserve on the
   * same connection, so Redis runs it after the reserve; it is fenced by the token, so it can free
   * only that reserve's entry. If it cannot be sent (the connection is down), the lease heals the
   * key as before.
   */
  private void undoUnknownReserves(List<ReserveRequest> requests, StoreUnavailableException e) {
    if (!e.outcomeUnknown() || closed) {
      return;
    }
    List<RedisCommand<byte[], byte[], ?>> undo = new ArrayList<>(requests.size());
    for (ReserveRequest r : requests) {
      ReleaseRequest release = new ReleaseRequest(r.scope(), r.key(), r.token(), r.nowMillis());
      undo.add(releaseCall(release).prepare(false)); // EVAL: correct even without a script cache
    }
    try {
      connection.dispatch(undo);
    } catch (RuntimeException failed) {
      LOG.log(
          System.Logger.Level.DEBUG,
          "Redis {0}: could not send the release of {1} reserve(s) whose outcome is unknown ({2});"
              + " their leases heal them",
          description,
          requests.size(),
          failed.getMessage());
    }
  }

  @Override
  public SettleResult commit(CommitRequest request) {
    ensureOpen();
    ScriptCall<Long> call = commitCall(request);
    connection.dispatch(call.prepare(true));
    awaitOne(call, "commit");
    return settled(call, "commit");
  }

  @Override
  public SettleResult release(ReleaseRequest request) {
    ensureOpen();
    ScriptCall<Long> call = releaseCall(request);
    connection.dispatch(call.prepare(true));
    awaitOne(call, "release");
    return settled(call, "release");
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: one Lua script ({@code extend}) on the key; it moves the deadline in the value and the
   * key's {@code PX} together.
   */
  @Override
  public SettleResult extend(ExtendRequest request) {
    ensureOpen();
    ScriptCall<Long> call = extendCall(request);
    connection.dispatch(call.prepare(true));
    awaitOne(call, "extend");
    return settled(call, "extend");
  }

  /**
   * Reserves without blocking: the same script and answers as {@link #reserve}, for callers that
   * keep many requests in flight on few threads. The future completes on a Lettuce I/O thread, so
   * chained work must not block; it completes exceptionally with the exceptions {@link #reserve}
   * throws (a command timeout included).
   *
   * @param request what to reserve
   * @return the outcome, when Redis answers
   */
  public CompletableFuture<ReserveResult> reserveAsync(ReserveRequest request) {
    ensureOpen();
    ScriptCall<List<Object>> call = reserveCall(request);
    CompletableFuture<ReserveResult> result =
        sendAsync(call, "reserve", c -> decodeReserve(c, request));
    result.whenComplete(
        (answer, failure) -> {
          if (failure != null && unwrap(failure) instanceof StoreUnavailableException e) {
            undoUnknownReserves(List.of(request), e);
          }
        });
    return result;
  }

  /**
   * Commits without blocking; see {@link #commit} and {@link #reserveAsync}.
   *
   * @param request what to commit
   * @return {@link SettleResult#APPLIED} or {@link SettleResult#STALE}, when Redis answers
   */
  public CompletableFuture<SettleResult> commitAsync(CommitRequest request) {
    ensureOpen();
    ScriptCall<Long> call = commitCall(request);
    return sendAsync(call, "commit", c -> settled(c, "commit"));
  }

  /**
   * Releases without blocking; see {@link #release} and {@link #reserveAsync}.
   *
   * @param request what to release
   * @return {@link SettleResult#APPLIED} or {@link SettleResult#STALE}, when Redis answers
   */
  public CompletableFuture<SettleResult> releaseAsync(ReleaseRequest request) {
    ensureOpen();
    ScriptCall<Long> call = releaseCall(request);
    return sendAsync(call, "release", c -> settled(c, "release"));
  }

  /**
   * Returns the Lua scripts this store runs, by name ({@code reserve}, {@code commit}, {@code
   * release}, {@code extend}): for audits, for preloading them with {@code SCRIPT LOAD}, and for
   * benchmarks that run the same script outside Idem. They are part of the stable format (see
   * {@code docs/stores/redis.md}).
   *
   * @return the script texts, in a fixed order
   */
  public static Map<String, String> luaScripts() {
    Map<String, String> scripts = new LinkedHashMap<>();
    for (LuaScripts.Script s : LuaScripts.ALL) {
      scripts.put(s.name(), s.body());
    }
    return Collections.unmodifiableMap(scripts);
  }

  @Override
  public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
    ensureOpen();
    List<ScriptCall<List<Object>>> calls = new ArrayList<>(requests.size());
    for (ReserveRequest r : requests) {
      calls.add(reserveCall(r));
    }
    try {
      runBatch(calls, "reserveAll");
    } catch (StoreUnavailableException e) {
      // The caller gets no reservation of this batch, also not of those Redis did answer.
      undoUnknownReserves(requests, e);
      throw e;
    }
    List<ReserveResult> out = new ArrayList<>(calls.size());
    for (int i = 0; i < calls.size(); i++) {
      out.add(decodeReserve(calls.get(i), requests.get(i)));
    }
    return out;
  }

  @Override
  public List<SettleResult> commitAll(List<CommitRequest> requests) {
    ensureOpen();
    List<ScriptCall<Long>> calls = new ArrayList<>(requests.size());
    for (CommitRequest r : requests) {
      calls.add(commitCall(r));
    }
    runBatch(calls, "commitAll");
    return settledAll(calls, "commitAll");
  }

  @Override
  public List<SettleResult> releaseAll(List<ReleaseRequest> requests) {
    ensureOpen();
    List<ScriptCall<Long>> calls = new ArrayList<>(requests.size());
    for (ReleaseRequest r : requests) {
      calls.add(releaseCall(r));
    }
    runBatch(calls, "releaseAll");
    return settledAll(calls, "releaseAll");
  }

  @Override
  public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    ensureOpen();
    if (compact != null) {
      return inspectCompact(compact.inspect(scope, key, nowMillis), nowMillis);
    }
    byte[] redisKey = layout.key(scope, key);
    byte[] value = await(commands.get(redisKey), "inspect", redisKey);
    if (value == null) {
      return KeyState.ABSENT;
    }
    return DedupStateMachine.inspect(
        EntryFormat.decode(value, KeyLayout.text(redisKey)), nowMillis);
  }

  @Override
  public boolean forget(Scope scope, DedupKey key) {
    ensureOpen();
    if (compact != null) {
      ScriptCall<Long> call = compactCall(compact.forget(scope, key, 0), false);
      connection.dispatch(call.prepare(true));
      awaitOne(call, "forget");
      return settled(call, "forget") == SettleResult.APPLIED;
    }
    byte[] redisKey = layout.key(scope, key);
    Long removed = await(commands.del(new byte[][] {redisKey}), "forget", redisKey);
    return removed != null && removed > 0;
  }

  /**
   * Removes every key of one scope with {@code SCAN} (every master of a cluster) and {@code UNLINK}
   * in batches of about a thousand; never {@code FLUSHDB}. Keys written while it runs may remain.
   * Each command gets the command timeout; the whole clear may take longer on a large database.
   *
   * @param scope the scope
   * @return how many keys were removed, expired-but-present ones included
   */
  @Override
  public long clear(Scope scope) {
    ensureOpen();
    ScanArgs args =
        new ScanArgs()
            .match(compact != null ? compact.scanPattern(scope) : layout.scanPattern(scope))
            .limit(1000);
    ScanCursor cursor = ScanCursor.INITIAL;
    long removed = 0;
    do {
      KeyScanCursor<byte[]> page = await(commands.scan(cursor, args), "clear (SCAN)", null);
      List<byte[]> keys = page.getKeys();
      if (compact != null && !keys.isEmpty()) {
        removed += unlinkCompact(keys);
      } else if (!keys.isEmpty()) {
        Long n = await(commands.unlink(keys.toArray(new byte[0][])), "clear (UNLINK)", null);
        removed += n == null ? 0 : n;
      }
      cursor = page;
    } while (!cursor.isFinished());
    return removed;
  }

  /**
   * Sends {@code PING} and waits for the answer; at most once a minute, also reads Redis's eviction
   * and persistence settings again (see {@link #durabilityRisks()}).
   *
   * @throws StoreUnavailableException if Redis does not answer within the command timeout
   */
  @Override
  public void checkHealth() {
    ensureOpen();
    await(commands.ping(), "health check (PING)", null);
    if (System.nanoTime() - durabilityCheckedNanos > DURABILITY_RECHECK_NANOS) {
      checkDurability();
    }
  }

  /**
   * Returns what Redis's settings risk, as read at open and then at most once a minute by {@link
   * #checkHealth()}: one sentence per risk (an eviction policy other than {@code noeviction} evicts
   * committed keys under memory pressure; without an append-only file a restart forgets keys), each
   * saying how to fix it. Empty when the settings keep every committed key. On a cluster, the
   * settings of the node that answered.
   *
   * @return the risks, empty if none
   */
  public List<String> durabilityRisks() {
    return durabilityRisks;
  }

  /** Makes the next {@link #checkHealth()} read the settings again (for tests). */
  void expireDurabilityCheck() {
    durabilityCheckedNanos = System.nanoTime() - DURABILITY_RECHECK_NANOS - 1;
  }

  /** Reads the settings, logs a change, and remembers the risks. */
  private List<String> checkDurability() {
    List<String> risks;
    try {
      Map<String, String> settings =
          await(commands.configGet(DurabilityCheck.SETTINGS), "CONFIG GET", null);
      risks = DurabilityCheck.risks(settings);
    } catch (StoreUnavailableException e) {
      throw e;
    } catch (RuntimeException e) {
      // A managed Redis may rename or forbid CONFIG.
      risks =
          List.of(
              "cannot read the eviction and persistence settings ("
                  + e.getMessage()
                  + "): make sure maxmemory-policy is noeviction and appendonly is yes");
    }
    durabilityCheckedNanos = System.nanoTime();
    if (!risks.equals(durabilityRisks)) {
      for (String risk : risks) {
        LOG.log(System.Logger.Level.WARNING, "Redis {0} can forget keys: {1}", description, risk);
      }
    }
    durabilityRisks = List.copyOf(risks);
    return durabilityRisks;
  }

  /**
   * Returns the capabilities: keys are not bounded by the store (Redis memory is the operator's:
   * run {@code maxmemory-policy noeviction}), durable in the sense that committed keys outlive this
   * store object and its process (how long they outlive a Redis restart is Redis persistence's
   * business), native expiry, and an outbox, except on a Redis Cluster with a prefix without a hash
   * tag (see the class comment).
   */
  @Override
  public StoreCapabilities capabilities() {
    return capabilities;
  }

  /**
   * Returns the scheme, hosts and prefix, e.g. {@code redis://127.0.0.1:6379 prefix=idem:}; never a
   * password.
   */
  @Override
  public String describe() {
    return description;
  }

  /**
   * Returns the settings this store runs with.
   *
   * @return the configuration
   */
  public RedisDedupStoreConfig config() {
    return config;
  }

  /**
   * Closes the connection and, if the store created the Lettuce client, shuts the client down.
   * Idempotent; later operations throw {@link IllegalStateException}.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      connection.close();
    } finally {
      if (ownedClient != null) {
        ownedClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
      if (ownedResources != null) {
        ownedResources.shutdown(0, 2, TimeUnit.SECONDS);
      }
    }
  }

  @Override
  public String toString() {
    return "RedisDedupStore[" + description + "]";
  }

  // --- outbox ----------------------------------------------------------------------------------

  /**
   * {@inheritDoc}
   *
   * <p>Here: one Lua script on the dedup key and the keys of the messages' queues: the commit, then
   * the appends. A repeated commit with the token that committed answers {@link
   * SettleResult#APPLIED} and appends nothing.
   *
   * @throws IdemConfigException on a Redis Cluster whose prefix has no hash tag
   */
  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    ensureOpen();
    Objects.requireNonNull(commit, "commit");
    if (messages.isEmpty()) {
      throw new IllegalArgumentException("commitAndEnqueue needs at least one message");
    }
    if (compact != null) {
      throw new IdemConfigException(
          "commitAndEnqueue on "
              + description
              + ": the compact layout has no outbox; use layout standard for async delivery");
    }
    ScriptCall<Long> call = commitCall(commit);
    return outbox.commitAndEnqueue(commit, call.key, List.copyOf(messages), call.argv);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: one Lua script takes the due entries from the queue's ready set (which holds only the
   * head of each ordering key), counts the attempt and moves them to the end of their claim.
   */
  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    ensureOpen();
    return outbox.claim(queue, max, nowMillis, claimMillis);
  }

  @Override
  public boolean acknowledge(String queue, long id) {
    ensureOpen();
    return outbox.acknowledge(queue, id, -1);
  }

  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    ensureOpen();
    return outbox.acknowledge(claimed.queue(), claimed.id(), claimed.attempts());
  }

  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    ensureOpen();
    outbox.reschedule(queue, id, -1, notBeforeMillis, error);
  }

  @Override
  public boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error) {
    ensureOpen();
    return outbox.reschedule(
        claimed.queue(), claimed.id(), claimed.attempts(), notBeforeMillis, error);
  }

  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    ensureOpen();
    outbox.deadLetter(queue, id, -1, reason, nowMillis);
  }

  @Override
  public boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis) {
    ensureOpen();
    return outbox.deadLetter(claimed.queue(), claimed.id(), claimed.attempts(), reason, nowMillis);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: oldest death first (ties by id). Dead letters are kept until the keys are removed.
   */
  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    ensureOpen();
    return outbox.deadLetters(queue, limit);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: one Lua script walks the queue's dead-letter set backwards from the upper bound.
   */
  @Override
  public List<DeadLetter> deadLetters(String queue, DeadLetterQuery query) {
    ensureOpen();
    return outbox.deadLetters(queue, query);
  }

  @Override
  public Optional<DeadLetter> findDeadLetter(String queue, long id) {
    ensureOpen();
    return outbox.findDeadLetter(queue, id);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: one Lua script on the queue's keys deletes the dead letter and appends the new entry
   * with the dead letter's ordering key: at the end of the key's list, and ready at once only if no
   * other entry of its key waits.
   */
  @Override
  public OptionalLong requeueDeadLetter(String queue, long id, long nowMillis) {
    ensureOpen();
    return outbox.requeueDeadLetter(queue, id, nowMillis);
  }

  @Override
  public boolean purgeDeadLetter(String queue, long id) {
    ensureOpen();
    return outbox.purgeDeadLetter(queue, id);
  }

  @Override
  public long purgeDeadLetters(String queue) {
    ensureOpen();
    return outbox.purgeDeadLetters(queue);
  }

  @Override
  public List<PendingEntry> pending(String queue, int limit) {
    ensureOpen();
    return outbox.pending(queue, limit);
  }

  @Override
  public long depth(String queue) {
    ensureOpen();
    byte[] key = outbox.depthKey(queue);
    Long n = await(commands.zcard(key), "depth", key);
    return n == null ? 0 : n;
  }

  /** Runs one outbox script by SHA, again by text after a NOSCRIPT, and maps failures. */
  private <T> T runScript(
      LuaScripts.Script script,
      ScriptOutputType type,
      byte[][] keys,
      byte[][] args,
      String what,
      byte[] firstKey) {
    ensureOpen();
    Future<T> future = commands.evalsha(script.sha(), type, keys, args);
    Throwable failure = waitFor(future, System.nanoTime() + timeoutNanos, what);
    if (failure instanceof RedisNoScriptException) {
      future = commands.eval(script.bodyBytes(), type, keys, args);
      failure = waitFor(future, System.nanoTime() + timeoutNanos, what);
    }
    if (failure != null) {
      throw RedisErrors.map(
          failure, description, what, KeyLayout.text(firstKey), config.commandTimeout());
    }
    return await(future, what, firstKey);
  }

  // --- scripts ---------------------------------------------------------------------------------

  private ScriptCall<List<Object>> reserveCall(ReserveRequest r) {
    if (compact != null) {
      return compactCall(compact.reserve(r), true);
    }
    long now = r.nowMillis();
    long leaseUntil = r.leaseUntil();
    Fingerprint fingerprint = r.fingerprint();
    byte[] refreshDeadline = EMPTY;
    byte[] refreshPx = EMPTY;
    Ttl ttl = r.ttl();
    if (ttl.expiry() == Expiry.SLIDING && ttl.expires()) {
      long refreshed = ttl.expiresAt(now);
      refreshDeadline = EntryFormat.longBytes(refreshed);
      refreshPx = px(now, refreshed);
    }
    return new ScriptCall<>(
        LuaScripts.RESERVE,
        true,
        layout.key(r.scope(), r.key()),
        decimal(now),
        EntryFormat.inFlight(r.token(), now, leaseUntil, fingerprint),
        px(now, leaseUntil),
        fingerprint == null ? EMPTY : fingerprint.toBytes(),
        refreshDeadline,
        refreshPx);
  }

  private ScriptCall<Long> commitCall(CommitRequest c) {
    if (compact != null) {
      return compactCall(compact.commit(c), false);
    }
    long now = c.nowMillis();
    long expiresAt = c.ttl().expiresAt(now);
    byte[] times = new byte[16];
    EntryFormat.putLong(times, 0, now);
    EntryFormat.putLong(times, 8, expiresAt);
    byte[] result = c.result();
    return new ScriptCall<>(
        LuaScripts.COMMIT,
        false,
        layout.key(c.scope(), c.key()),
        decimal(now),
        EntryFormat.longBytes(c.token()),
        times,
        px(now, expiresAt),
        result == null ? ZERO : ONE,
        result == null ? EMPTY : result);
  }

  private ScriptCall<Long> releaseCall(ReleaseRequest r) {
    if (compact != null) {
      return compactCall(compact.release(r), false);
    }
    return new ScriptCall<>(
        LuaScripts.RELEASE,
        false,
        layout.key(r.scope(), r.key()),
        decimal(r.nowMillis()),
        EntryFormat.longBytes(r.token()));
  }

  private ScriptCall<Long> extendCall(ExtendRequest e) {
    if (compact != null) {
      return compactCall(compact.extend(e), false);
    }
    long now = e.nowMillis();
    long until = e.leaseUntil();
    return new ScriptCall<>(
        LuaScripts.EXTEND,
        false,
        layout.key(e.scope(), e.key()),
        decimal(now),
        EntryFormat.longBytes(e.token()),
        EntryFormat.longBytes(until),
        px(now, until));
  }

  private static <T> ScriptCall<T> compactCall(CompactLayout.Call c, boolean multiReply) {
    return new ScriptCall<>(c.script(), multiReply, c.key(), c.argv());
  }

  /** Runs the compact layout's inspect script and decodes its {} / {value} / {value, result}. */
  private KeyState inspectCompact(CompactLayout.Call c, long nowMillis) {
    ScriptCall<List<Object>> call = compactCall(c, true);
    connection.dispatch(call.prepare(true));
    awaitOne(call, "inspect");
    List<Object> reply = call.command.join();
    if (reply == null || reply.isEmpty()) {
      return KeyState.ABSENT;
    }
    if (reply.size() > 2
        || !(reply.get(0) instanceof byte[] value)
        || (reply.size() == 2 && reply.get(1) != null && !(reply.get(1) instanceof byte[]))) {
      throw RedisErrors.unexpectedReply("inspect", reply, description);
    }
    byte[] result = reply.size() == 2 ? (byte[]) reply.get(1) : null;
    return DedupStateMachine.inspect(
        CompactFormat.decode(value, result, KeyLayout.text(c.key())), nowMillis);
  }

  /**
   * Unlinks one page of a compact scope's keys; returns how many dedup keys they held (the entries
   * of the shard hashes, counted just before: every field but the meta field; result keys count
   * nothing).
   */
  private long unlinkCompact(List<byte[]> keys) {
    List<RedisFuture<Long>> lengths = new ArrayList<>();
    List<RedisFuture<Boolean>> metas = new ArrayList<>();
    for (byte[] k : keys) {
      if (CompactLayout.isShardHash(k)) {
        lengths.add(commands.hlen(k));
        metas.add(commands.hexists(k, CompactLayout.META_FIELD));
      }
    }
    long held = 0;
    for (int i = 0; i < lengths.size(); i++) {
      Long v = await(lengths.get(i), "clear (HLEN)", null);
      Boolean meta = await(metas.get(i), "clear (HEXISTS)", null);
      held += (v == null ? 0 : v) - (Boolean.TRUE.equals(meta) ? 1 : 0);
    }
    await(commands.unlink(keys.toArray(new byte[0][])), "clear (UNLINK)", null);
    return held;
  }

  private ReserveResult decodeReserve(ScriptCall<List<Object>> call, ReserveRequest r) {
    List<Object> reply = call.command.join();
    if (reply != null && !reply.isEmpty() && reply.get(0) instanceof Long code) {
      switch (code.intValue()) {
        case 0:
          if (reply.size() == 2
              && reply.get(1) instanceof Long replaced
              && replaced >= 0
              && replaced < REPLACED.length) {
            return new ReserveResult.Acquired(
                r.token(), r.leaseUntil(), REPLACED[replaced.intValue()]);
          }
          break;
        case 1:
          if (reply.size() == 4
              && isInt64(reply.get(1))
              && isInt64(reply.get(2))
              && (reply.get(3) == null || reply.get(3) instanceof byte[])) {
            byte[] result = (byte[]) reply.get(3);
            return new ReserveResult.Duplicate(
                EntryFormat.getLong((byte[]) reply.get(1), 0),
                EntryFormat.getLong((byte[]) reply.get(2), 0),
                result);
          }
          break;
        case 2:
          if (reply.size() == 2 && isInt64(reply.get(1))) {
            return new ReserveResult.InFlight(EntryFormat.getLong((byte[]) reply.get(1), 0));
          }
          break;
        case 3:
          if (reply.size() == 2 && isInt64(reply.get(1))) {
            return new ReserveResult.Conflict(EntryFormat.getLong((byte[]) reply.get(1), 0));
          }
          break;
        default:
          break;
      }
    }
    throw RedisErrors.unexpectedReply("reserve", reply, description);
  }

  private static boolean isInt64(@Nullable Object o) {
    return o instanceof byte[] b && b.length == 8;
  }

  private SettleResult settled(ScriptCall<Long> call, String what) {
    Long reply = call.command.join();
    if (reply != null && reply == 1) {
      return SettleResult.APPLIED;
    }
    if (reply != null && reply == 0) {
      return SettleResult.STALE;
    }
    throw RedisErrors.unexpectedReply(what, reply, description);
  }

  private List<SettleResult> settledAll(List<ScriptCall<Long>> calls, String what) {
    List<SettleResult> out = new ArrayList<>(calls.size());
    for (ScriptCall<Long> call : calls) {
      out.add(settled(call, what));
    }
    return out;
  }

  /** Relative Redis expiry for a deadline, as decimal text; empty for "no expiry". */
  private static byte[] px(long now, long deadline) {
    if (deadline == Long.MAX_VALUE) {
      return EMPTY;
    }
    long left = deadline - now;
    return left > MAX_EXPIRY_MILLIS ? EMPTY : decimal(Math.max(1, left));
  }

  private static byte[] decimal(long value) {
    return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
  }

  // --- waiting -----------------------------------------------------------------------------------

  /**
   * Sends one script and completes the returned future with {@code decode} of its reply, with one
   * retry as {@code EVAL} after a {@code NOSCRIPT}, and Lettuce's failures mapped.
   */
  private <T, R> CompletableFuture<R> sendAsync(
      ScriptCall<T> call, String what, Function<ScriptCall<T>, R> decode) {
    CompletableFuture<R> result = new CompletableFuture<>();
    AsyncCommand<byte[], byte[], T> first = call.prepare(true);
    connection.dispatch(first);
    first.whenComplete(
        (reply, failure) -> {
          if (failure != null && unwrap(failure) instanceof RedisNoScriptException) {
            // The server lost its script cache: EVAL loads it again (see awaitOne).
            AsyncCommand<byte[], byte[], T> again = call.prepare(false);
            connection.dispatch(again);
            again.whenComplete((r, f) -> completeAsync(result, call, what, decode, f));
          } else {
            completeAsync(result, call, what, decode, failure);
          }
        });
    return result;
  }

  private <T, R> void completeAsync(
      CompletableFuture<R> result,
      ScriptCall<T> call,
      String what,
      Function<ScriptCall<T>, R> decode,
      @Nullable Throwable failure) {
    try {
      if (failure != null) {
        throw RedisErrors.map(
            failure, description, what, KeyLayout.text(call.key), config.commandTimeout());
      }
      result.complete(decode.apply(call));
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
    }
  }

  private static Throwable unwrap(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || c instanceof ExecutionException)
        && c.getCause() != null) {
      c = c.getCause();
    }
    return c;
  }

  private void awaitOne(ScriptCall<?> call, String what) {
    Throwable failure = waitFor(call.command, System.nanoTime() + timeoutNanos, what);
    if (failure instanceof RedisNoScriptException) {
      // The server lost its script cache (restart, failover, SCRIPT FLUSH): EVAL loads it again.
      connection.dispatch(call.prepare(false));
      failure = waitFor(call.command, System.nanoTime() + timeoutNanos, what);
    }
    if (failure != null) {
      throw RedisErrors.map(
          failure, description, what, KeyLayout.text(call.key), config.commandTimeout());
    }
  }

  /**
   * Sends a batch in one write and waits for every reply (commands already sent cannot be taken
   * back, so a failure does not stop the waiting). Throws the first failure; if other commands of
   * the batch were applied, a "not applied" failure becomes "outcome unknown" for the batch.
   */
  private <T> void runBatch(List<ScriptCall<T>> calls, String what) {
    if (calls.isEmpty()) {
      return;
    }
    List<RedisCommand<byte[], byte[], ?>> out = new ArrayList<>(calls.size());
    for (ScriptCall<T> call : calls) {
      out.add(call.prepare(true));
    }
    // One write and one flush for the whole batch; on a cluster Lettuce routes each by slot.
    connection.dispatch(out);
    BatchOutcome outcome = new BatchOutcome();
    List<ScriptCall<T>> reload = awaitBatch(calls, what, outcome);
    if (!reload.isEmpty()) {
      // A server lost its script cache: EVAL loads it again (see awaitOne).
      List<RedisCommand<byte[], byte[], ?>> again = new ArrayList<>(reload.size());
      for (ScriptCall<T> call : reload) {
        again.add(call.prepare(false));
      }
      connection.dispatch(again);
      awaitBatch(reload, what, outcome);
    }
    if (outcome.failure != null) {
      IdemException mapped =
          RedisErrors.map(
              outcome.failure,
              description,
              what,
              KeyLayout.text(outcome.failedKey),
              config.commandTimeout());
      if (mapped instanceof StoreUnavailableException u
          && !u.outcomeUnknown()
          && outcome.applied > 0) {
        throw new StoreUnavailableException(
            description,
            true,
            what
                + ": "
                + outcome.applied
                + " of "
                + calls.size()
                + " commands were carried out despite this failure, the others not: "
                + u.getMessage(),
            u);
      }
      throw mapped;
    }
  }

  /** Waits for a batch's replies; returns the calls that must be sent again after NOSCRIPT. */
  private <T> List<ScriptCall<T>> awaitBatch(
      List<ScriptCall<T>> calls, String what, BatchOutcome outcome) {
    long deadline = System.nanoTime() + timeoutNanos;
    List<ScriptCall<T>> reload = List.of();
    for (ScriptCall<T> call : calls) {
      Throwable failure = waitFor(call.command, deadline, what);
      if (failure == null) {
        outcome.applied++;
      } else if (failure instanceof RedisNoScriptException && !call.byEval) {
        if (reload.isEmpty()) {
          reload = new ArrayList<>();
        }
        reload.add(call);
      } else if (outcome.failure == null) {
        outcome.failure = failure;
        outcome.failedKey = call.key;
      }
    }
    return reload;
  }

  /** What came back from a batch so far. */
  private static final class BatchOutcome {
    int applied;
    @Nullable Throwable failure;
    byte[] failedKey = EMPTY;
  }

  private <T> T await(Future<T> future, String what, byte @Nullable [] key) {
    Throwable failure = waitFor(future, System.nanoTime() + timeoutNanos, what);
    if (failure != null) {
      throw RedisErrors.map(
          failure,
          description,
          what,
          key == null ? null : KeyLayout.text(key),
          config.commandTimeout());
    }
    try {
      return future.get();
    } catch (InterruptedException | ExecutionException e) {
      throw RedisErrors.map(
          e, description, what, key == null ? null : KeyLayout.text(key), config.commandTimeout());
    }
  }

  /** Waits until the deadline; returns the failure, or null if the command succeeded. */
  private @Nullable Throwable waitFor(Future<?> future, long deadlineNanos, String what) {
    try {
      future.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
      return null;
    } catch (ExecutionException e) {
      return e.getCause() == null ? e : e.getCause();
    } catch (TimeoutException e) {
      future.cancel(true);
      return new RedisCommandTimeoutException(what + " timed out");
    } catch (CancellationException e) {
      return e;
    } catch (InterruptedException e) {
      future.cancel(true);
      throw RedisErrors.interrupted(description, what);
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw RedisErrors.closed(description);
    }
  }

  /**
   * One script invocation, kept so that it can be sent again with {@code EVAL} after a {@code
   * NOSCRIPT}.
   */
  private static final class ScriptCall<T> {
    private final LuaScripts.Script script;
    private final boolean multiReply;
    final byte[] key;
    final byte[][] argv;
    AsyncCommand<byte[], byte[], T> command;
    boolean byEval;

    ScriptCall(LuaScripts.Script script, boolean multiReply, byte[] key, byte[]... argv) {
      this.script = script;
      this.multiReply = multiReply;
      this.key = key;
      this.argv = argv;
    }

    @SuppressWarnings("unchecked")
    AsyncCommand<byte[], byte[], T> prepare(boolean bySha) {
      byEval = !bySha;
      CommandArgs<byte[], byte[]> args = new CommandArgs<>(CODEC);
      if (bySha) {
        args.add(script.sha());
      } else {
        args.add(script.bodyBytes());
      }
      args.add(1).addKey(key);
      for (byte[] a : argv) {
        args.add(a);
      }
      CommandOutput<byte[], byte[], ?> output =
          multiReply ? new NestedMultiOutput<>(CODEC) : new IntegerOutput<>(CODEC);
      command =
          new AsyncCommand<>(
              new Command<>(
                  bySha ? CommandType.EVALSHA : CommandType.EVAL,
                  (CommandOutput<byte[], byte[], T>) output,
                  args));
      return command;
    }
  }

  /** Configures and opens a {@link RedisDedupStore}. Not thread-safe; build once. */
  public static final class Builder {
    private final List<String> uris;
    private final @Nullable AbstractRedisClient client;
    private String prefix = RedisDedupStoreConfig.DEFAULT_PREFIX;
    private Duration commandTimeout = RedisDedupStoreConfig.DEFAULT_COMMAND_TIMEOUT;
    private Duration connectTimeout = RedisDedupStoreConfig.DEFAULT_CONNECT_TIMEOUT;
    private Duration reconnectDelay = RedisDedupStoreConfig.DEFAULT_RECONNECT_DELAY;
    private boolean requireDurable;
    private boolean cluster;
    private RedisDedupStoreConfig.Layout keyLayout = RedisDedupStoreConfig.Layout.STANDARD;
    private int compactShards = RedisDedupStoreConfig.DEFAULT_COMPACT_SHARDS;

    private Builder(List<String> uris, @Nullable AbstractRedisClient client) {
      this.uris = uris;
      this.client = client;
    }

    /**
     * Sets the key prefix (default {@code idem:}). Stores with the same Redis and prefix share
     * their keys; use a different prefix to keep applications apart.
     *
     * @param prefix 1 to 256 printable characters
     * @return this builder
     */
    public Builder prefix(String prefix) {
      this.prefix = Objects.requireNonNull(prefix, "prefix");
      return this;
    }

    /**
     * Sets how long a command or a batch may take before it fails as "outcome unknown" (default 2
     * s).
     *
     * @param commandTimeout 1 ms to 10 minutes
     * @return this builder
     */
    public Builder commandTimeout(Duration commandTimeout) {
      this.commandTimeout = Objects.requireNonNull(commandTimeout, "commandTimeout");
      return this;
    }

    /**
     * Sets how long opening a connection may take (default 5 s); only for clients the store creates
     * from URIs.
     *
     * @param connectTimeout 1 ms to 10 minutes
     * @return this builder
     */
    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = Objects.requireNonNull(connectTimeout, "connectTimeout");
      return this;
    }

    /**
     * Sets the longest wait between two reconnect attempts (default 250 ms); only for clients the
     * store creates from URIs (a caller's client keeps its own {@code ClientResources}).
     *
     * @param reconnectDelay 1 ms to 1 minute
     * @return this builder
     */
    public Builder reconnectDelay(Duration reconnectDelay) {
      this.reconnectDelay = Objects.requireNonNull(reconnectDelay, "reconnectDelay");
      return this;
    }

    /**
     * Makes {@link #build()} refuse a Redis set up to forget keys (default false: it logs a
     * warning). See {@link RedisDedupStoreConfig#requireDurable()}.
     *
     * @param requireDurable whether to refuse
     * @return this builder
     */
    public Builder requireDurable(boolean requireDurable) {
      this.requireDurable = requireDurable;
      return this;
    }

    /**
     * Chooses the key layout (default {@link RedisDedupStoreConfig.Layout#STANDARD}); see {@link
     * RedisDedupStoreConfig#layout()}. Stores on one prefix must all use the same layout.
     *
     * @param layout the layout
     * @return this builder
     */
    public Builder layout(RedisDedupStoreConfig.Layout layout) {
      this.keyLayout = Objects.requireNonNull(layout, "layout");
      return this;
    }

    /**
     * Sets the shards (hashes) per scope of the compact layout (default 4096); see {@link
     * RedisDedupStoreConfig#compactShards()}. Stores on one prefix must all use the same number.
     *
     * @param compactShards 1 to 16,777,216
     * @return this builder
     */
    public Builder compactShards(int compactShards) {
      this.compactShards = compactShards;
      return this;
    }

    /**
     * Treats the URIs as Redis Cluster seeds even when there is only one (several seeds always mean
     * a cluster). Only for {@link RedisDedupStore#builder(String...)}.
     *
     * @param cluster whether the servers form a cluster
     * @return this builder
     */
    public Builder cluster(boolean cluster) {
      this.cluster = cluster;
      return this;
    }

    /**
     * Takes prefix and timeouts from a configuration.
     *
     * @param config the settings
     * @return this builder
     */
    public Builder config(RedisDedupStoreConfig config) {
      Objects.requireNonNull(config, "config");
      this.prefix = config.prefix();
      this.commandTimeout = config.commandTimeout();
      this.connectTimeout = config.connectTimeout();
      this.reconnectDelay = config.reconnectDelay();
      this.requireDurable = config.requireDurable();
      this.keyLayout = config.layout();
      this.compactShards = config.compactShards();
      return this;
    }

    /**
     * Validates the settings, connects, and loads the scripts.
     *
     * @return the open store
     * @throws IdemConfigException if a setting or URI is not allowed, or a caller-owned client does
     *     not fail closed
     * @throws StoreUnavailableException if Redis cannot be reached
     */
    public RedisDedupStore build() {
      RedisDedupStoreConfig config =
          new RedisDedupStoreConfig(
              prefix,
              commandTimeout,
              connectTimeout,
              reconnectDelay,
              requireDurable,
              keyLayout,
              compactShards);
      if (client != null) {
        if (cluster) {
          throw new IdemConfigException(
              "redis cluster(true) applies to URIs only; pass a RedisClusterClient for a cluster");
        }
        return open(config, client, null, callerDescription(client), config.prefix());
      }
      RedisEndpoints endpoints = RedisEndpoints.parse(uris, cluster, commandTimeout);
      ClientResources resources = resources(config);
      AbstractRedisClient created;
      if (endpoints.topology() == RedisEndpoints.Topology.CLUSTER) {
        RedisClusterClient c = RedisClusterClient.create(resources, endpoints.uris());
        c.setOptions(clusterOptions(config));
        created = c;
      } else {
        RedisClient c = RedisClient.create(resources, endpoints.uris().get(0));
        c.setOptions(clientOptions(config));
        created = c;
      }
      return open(config, created, resources, endpoints.description(), config.prefix());
    }

    /**
     * Lettuce's resources with a reconnect delay that starts at 10 ms and doubles up to the
     * configured bound (Lettuce's own default grows to 30 s, so a long outage was followed by up to
     * 30 s of "unavailable" after Redis was back).
     */
    static ClientResources resources(RedisDedupStoreConfig config) {
      Duration upper = config.reconnectDelay();
      Duration lower = upper.compareTo(Duration.ofMillis(10)) < 0 ? upper : Duration.ofMillis(10);
      return DefaultClientResources.builder()
          .reconnectDelay(Delay.exponential(lower, upper, 2, TimeUnit.MILLISECONDS))
          .build();
    }

    private static String callerDescription(AbstractRedisClient client) {
      return client instanceof RedisClusterClient ? "redis-cluster (caller's client)" : "redis";
    }

    private static RedisDedupStore open(
        RedisDedupStoreConfig config,
        AbstractRedisClient client,
        @Nullable ClientResources resources,
        String where,
        String prefix) {
      boolean owned = resources != null;
      String description =
          where
              + " prefix="
              + prefix
              + (config.layout() == RedisDedupStoreConfig.Layout.COMPACT
                  ? " layout=compact shards=" + config.compactShards()
                  : "");
      if (!owned) {
        checkFailsClosed(client.getOptions(), description);
      }
      StatefulConnection<byte[], byte[]> connection = null;
      try {
        RedisClusterAsyncCommands<byte[], byte[]> commands;
        if (client instanceof RedisClusterClient c) {
          StatefulRedisClusterConnection<byte[], byte[]> cc = c.connect(CODEC);
          connection = cc;
          commands = cc.async();
        } else {
          StatefulRedisConnection<byte[], byte[]> sc = ((RedisClient) client).connect(CODEC);
          connection = sc;
          commands = sc.async();
        }
        connection.setTimeout(config.commandTimeout());
        RedisDedupStore store =
            new RedisDedupStore(
                config, description, connection, commands, owned ? client : null, resources);
        store.loadScripts();
        List<String> risks = store.checkDurability();
        if (config.requireDurable() && !risks.isEmpty()) {
          store.close();
          throw new IdemConfigException(
              "the Redis store "
                  + description
                  + " requires durability (require_durable) but Redis can forget keys: "
                  + String.join("; ", risks)
                  + ". Fix the Redis settings, or turn require_durable off to run with the risk.");
        }
        return store;
      } catch (IdemConfigException e) {
        throw e;
      } catch (IllegalStateException e) {
        closeQuietly(connection, owned ? client : null, resources);
        throw new IdemConfigException(
            "the RedisClient has no URI ("
                + e.getMessage()
                + "): create it with RedisClient.create(uri), or pass the URI to"
                + " RedisDedupStore.builder(uri)");
      } catch (RuntimeException e) {
        closeQuietly(connection, owned ? client : null, resources);
        IdemException mapped =
            RedisErrors.map(e, description, "connect", null, config.commandTimeout());
        if (mapped instanceof StoreUnavailableException) {
          throw new StoreUnavailableException(
              description,
              false,
              "cannot open the Redis store "
                  + description
                  + ": "
                  + RedisEndpoints.mask(String.valueOf(rootMessage(e)))
                  + ". Check that Redis runs there and that the URI's password and TLS settings"
                  + " are right.",
              e);
        }
        throw mapped;
      }
    }

    private static void checkFailsClosed(ClientOptions options, String description) {
      if (options.getDisconnectedBehavior() != ClientOptions.DisconnectedBehavior.REJECT_COMMANDS
          || !options.isAutoReconnect()
          || !options.getTimeoutOptions().isTimeoutCommands()) {
        throw new IdemConfigException(
            "the Lettuce client given for "
                + description
                + " has disconnectedBehavior "
                + options.getDisconnectedBehavior()
                + ", autoReconnect "
                + options.isAutoReconnect()
                + " and timeoutCommands "
                + options.getTimeoutOptions().isTimeoutCommands()
                + ": Idem needs a client that rejects commands while disconnected (instead of"
                + " queueing them for a late replay), reconnects, and times commands out. Set"
                + " ClientOptions.builder().disconnectedBehavior(REJECT_COMMANDS)"
                + ".autoReconnect(true) (and keep Lettuce's default TimeoutOptions) on it, or let"
                + " Idem create the client with RedisDedupStore.builder(uri).");
      }
    }

    private static String rootMessage(Throwable t) {
      Throwable root = t;
      StringBuilder m = new StringBuilder(String.valueOf(t.getMessage()));
      while (root.getCause() != null && root.getCause() != root) {
        root = root.getCause();
        m.append(": ").append(root.getMessage());
      }
      return m.toString();
    }

    private static void closeQuietly(
        @Nullable StatefulConnection<byte[], byte[]> connection,
        @Nullable AbstractRedisClient owned,
        @Nullable ClientResources resources) {
      try {
        if (connection != null) {
          connection.close();
        }
      } catch (RuntimeException ignored) {
        // Already failing; the original error is the one to report.
      } finally {
        if (owned != null) {
          owned.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        if (resources != null) {
          resources.shutdown(0, 2, TimeUnit.SECONDS);
        }
      }
    }

    static ClientOptions clientOptions(RedisDedupStoreConfig config) {
      return ClientOptions.builder()
          .autoReconnect(true)
          .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
          .timeoutOptions(timeouts(config))
          .socketOptions(sockets(config))
          .build();
    }

    static ClusterClientOptions clusterOptions(RedisDedupStoreConfig config) {
      ClusterTopologyRefreshOptions.Builder refresh =
          ClusterTopologyRefreshOptions.builder()
              .enablePeriodicRefresh(Duration.ofSeconds(30))
              .dynamicRefreshSources(true)
              .closeStaleConnections(true);
      return ClusterClientOptions.builder()
          .autoReconnect(true)
          .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
          .timeoutOptions(timeouts(config))
          .socketOptions(sockets(config))
          .topologyRefreshOptions(enableAdaptiveRefresh(refresh).build())
          .build();
    }

    /**
     * Refreshes the topology on MOVED/ASK redirects and reconnect trouble. Lettuce 7 does this by
     * default and deprecates the call; Lettuce 6.8 (which Spring Boot 4 pins) needs it.
     */
    @SuppressWarnings("deprecation")
    private static ClusterTopologyRefreshOptions.Builder enableAdaptiveRefresh(
        ClusterTopologyRefreshOptions.Builder refresh) {
      return refresh.enableAllAdaptiveRefreshTriggers();
    }

    private static TimeoutOptions timeouts(RedisDedupStoreConfig config) {
      return TimeoutOptions.builder()
          .timeoutCommands(true)
          .fixedTimeout(config.commandTimeout())
          .build();
    }

    private static SocketOptions sockets(RedisDedupStoreConfig config) {
      return SocketOptions.builder()
          .connectTimeout(config.connectTimeout())
          .keepAlive(true)
          .build();
    }
  }

  private void loadScripts() {
    for (LuaScripts.Script script : compact != null ? CompactScripts.ALL : LuaScripts.ALL) {
      String sha = await(commands.scriptLoad(script.bodyBytes()), "SCRIPT LOAD", null);
      if (!script.sha().equals(sha)) {
        throw new StoreException(
            "Redis "
                + description
                + " named the "
                + script.name()
                + " script "
                + sha
                + " but its SHA-1 is "
                + script.sha()
                + ": is a proxy rewriting scripts?");
      }
    }
  }
}

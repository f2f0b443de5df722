package dev.idem.store.redis;

import dev.idem.DedupKey;
import dev.idem.IdemConfigException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.SettleResult;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * The outbox of {@link RedisDedupStore}: Lua scripts over a few Redis keys per queue, each script
 * on the keys of one queue (and, for the accept, the dedup key), so every step is atomic.
 *
 * <p>Layout of queue {@code q} under prefix {@code P} (all keys share the hash tag {@code {q}}, so
 * on a cluster a queue lives in one slot):
 *
 * <pre>
 * P outbox:{q}:seq  string  the last id given out (INCR)
 * P outbox:{q}:m    hash    entry id (16 decimal digits) -> MessagePack array
 *                           [dedup key(32 bytes), enqueued at, attempts, available at,
 *                            next id of the same ordering key or '', ordering key or '',
 *                            last error or false, previous id of the same ordering key or '']
 * P outbox:{q}:p    hash    entry id -> payload
 * P outbox:{q}:r    zset    claimable candidates: entries without an ordering key and the head
 *                           of each ordering key, scored by when they may be claimed next
 * P outbox:{q}:a    zset    every waiting entry, scored by id (pending, depth)
 * P outbox:{q}:t    hash    ordering key -> the id of its newest entry (the mailbox's tail)
 * P outbox:{q}:d    hash    dead letter id -> [dedup key, enqueued at, attempts, dead at, reason,
 *                            ordering key or '' (absent in dead letters written before it)]
 * P outbox:{q}:dp   hash    dead letter id -> payload
 * P outbox:{q}:dl   zset    dead letters scored by when they died (ties: by id)
 * </pre>
 *
 * <p>The entries of one ordering key form a doubly linked list through their metadata; only the
 * list's head is in the ready set, so a claim (ZRANGEBYSCORE up to now) can only hand out the head
 * of a key, and only when its claim or retry time has come. Settling the head (acknowledge, dead
 * letter) puts the next entry into the ready set. Fences: a claim adds one to the entry's attempts,
 * and the fenced settles compare it inside the script. A requeued dead letter is appended like a
 * new entry (to its ordering key's list, and to the ready set only if it is the key's head).
 */
final class RedisOutbox {
  private static final byte[] EMPTY = new byte[0];

  /** The largest time a script stores: Lua numbers are doubles, exact up to 2^53 (year 287,396). */
  private static final long MAX_TIME = 1L << 53;

  /** Unlinks entry {@code f} (metadata {@code m}) from its ordering key's list. */
  private static final String UNLINK =
      """
      local function unlink(km, kr, kt, f, m)
        local okey = m[6]
        if okey == '' then
          return
        end
        local prev, nxt = m[8], m[5]
        if nxt ~= '' then
          local raw = redis.call('HGET', km, nxt)
          if raw then
            local nm = cmsgpack.unpack(raw)
            nm[8] = prev
            redis.call('HSET', km, nxt, cmsgpack.pack(nm))
            if prev == '' then
              redis.call('ZADD', kr, math.max(nm[2], nm[4]), nxt)
            end
          end
        elseif prev == '' then
          redis.call('HDEL', kt, okey)
        else
          redis.call('HSET', kt, okey, prev)
        end
        if prev ~= '' then
          local raw = redis.call('HGET', km, prev)
          if raw then
            local pm = cmsgpack.unpack(raw)
            pm[5] = nxt
            redis.call('HSET', km, prev, cmsgpack.pack(pm))
          end
        end
      end
      """;

  /**
   * Appends an entry under a new id: to its ordering key's list ({@code okey}, '' for none) and to
   * the ready set only if it is the key's head. Returns the new id.
   */
  private static final String APPEND =
      """
      local function append(kseq, km, kp, kr, ka, kt, key, payload, okey, now)
        local id = redis.call('INCR', kseq)
        local f = string.format('%016d', id)
        local prev = ''
        if okey ~= '' then
          local tail = redis.call('HGET', kt, okey)
          if tail then
            local raw = redis.call('HGET', km, tail)
            if raw then
              local tm = cmsgpack.unpack(raw)
              tm[5] = f
              redis.call('HSET', km, tail, cmsgpack.pack(tm))
              prev = tail
            end
          end
          redis.call('HSET', kt, okey, f)
        end
        redis.call('HSET', km, f, cmsgpack.pack({key, now, 0, 0, '', okey, false, prev}))
        redis.call('HSET', kp, f, payload)
        redis.call('ZADD', ka, id, f)
        if prev == '' then
          redis.call('ZADD', kr, now, f)
        end
        return id
      end
      """;

  /** Reads entry ARGV[1] of KEYS[1] and checks the fence ARGV[2] (-1: none); returns m or nil. */
  private static final String FENCED_ENTRY =
      """
      local f = ARGV[1]
      local raw = redis.call('HGET', KEYS[1], f)
      if not raw then
        return 0
      end
      local m = cmsgpack.unpack(raw)
      local claim = tonumber(ARGV[2])
      if claim >= 0 and m[3] ~= claim then
        return 0
      end
      """;

  /**
   * Commit and enqueue. KEYS: 1 the dedup key, then for each message its queue's seq, m, p, r, a
   * and t. ARGV: 1-6 as the commit script, then for each message its payload, its dedup key (32
   * bytes) and its ordering key (empty: none). Returns 1 (applied; the messages were appended
   * unless the key was already committed with this token) or 0 (stale).
   */
  static final LuaScripts.Script COMMIT_AND_ENQUEUE =
      new LuaScripts.Script(
          "commit_and_enqueue",
          APPEND
              + """
          local v = redis.call('GET', KEYS[1])
          if v and (#v < 27 or string.byte(v, 1) ~= 1
              or (string.byte(v, 2) ~= 73 and string.byte(v, 2) ~= 67)) then
            return redis.error_reply('IDEM_BAD_VALUE the value is not an Idem v1 entry')
          end
          local now = tonumber(ARGV[1])
          if not v or string.sub(v, 3, 10) ~= ARGV[2] then
            return 0
          end
          local alive = now < struct.unpack('>i8', v, 19)
          if string.byte(v, 2) == 67 then
            return alive and 1 or 0
          end
          if not alive then
            return 0
          end
          local flags = string.byte(v, 27) % 2
          local fp = ''
          if flags == 1 then
            fp = string.sub(v, 28, 59)
          end
          if ARGV[5] == '1' then
            flags = flags + 2
          end
          local nv = string.char(1, 67) .. ARGV[2] .. ARGV[3] .. string.char(flags) .. fp .. ARGV[6]
          if ARGV[4] == '' then
            redis.call('SET', KEYS[1], nv)
          else
            redis.call('SET', KEYS[1], nv, 'PX', ARGV[4])
          end
          local n = (#KEYS - 1) / 6
          for i = 0, n - 1 do
            local kseq, km, kp = KEYS[2 + 6 * i], KEYS[3 + 6 * i], KEYS[4 + 6 * i]
            local kr, ka, kt = KEYS[5 + 6 * i], KEYS[6 + 6 * i], KEYS[7 + 6 * i]
            append(kseq, km, kp, kr, ka, kt, ARGV[8 + 3 * i], ARGV[7 + 3 * i], ARGV[9 + 3 * i], now)
          end
          return 1
          """);

  /**
   * Claim. KEYS: m, p, r. ARGV: 1 now, 2 max, 3 claimed until. Returns one array per claimed entry:
   * id, dedup key, payload, attempts, enqueued at, last error (nil if none).
   */
  static final LuaScripts.Script CLAIM =
      new LuaScripts.Script(
          "outbox_claim",
          """
          local now, max, untilT = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
          local ids = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, max)
          local out = {}
          for _, f in ipairs(ids) do
            local raw = redis.call('HGET', KEYS[1], f)
            if raw then
              local m = cmsgpack.unpack(raw)
              m[3] = m[3] + 1
              m[4] = untilT
              redis.call('HSET', KEYS[1], f, cmsgpack.pack(m))
              redis.call('ZADD', KEYS[3], untilT, f)
              out[#out + 1] = {f, m[1], redis.call('HGET', KEYS[2], f), m[3], m[2], m[7]}
            else
              redis.call('ZREM', KEYS[3], f)
            end
          end
          return out
          """);

  /** Acknowledge. KEYS: m, p, r, a, t. ARGV: 1 id, 2 fence (-1: none). Returns 1 or 0. */
  static final LuaScripts.Script ACKNOWLEDGE =
      new LuaScripts.Script(
          "outbox_acknowledge",
          UNLINK
              + FENCED_ENTRY
              + """
              redis.call('HDEL', KEYS[1], f)
              redis.call('HDEL', KEYS[2], f)
              redis.call('ZREM', KEYS[3], f)
              redis.call('ZREM', KEYS[4], f)
              unlink(KEYS[1], KEYS[3], KEYS[5], f, m)
              return 1
              """);

  /**
   * Reschedule. KEYS: m, r. ARGV: 1 id, 2 fence (-1: none), 3 not before, 4 error. Returns 1 or 0.
   */
  static final LuaScripts.Script RESCHEDULE =
      new LuaScripts.Script(
          "outbox_reschedule",
          FENCED_ENTRY
              + """
              m[4] = tonumber(ARGV[3])
              m[7] = ARGV[4]
              redis.call('HSET', KEYS[1], f, cmsgpack.pack(m))
              if m[6] == '' or m[8] == '' then
                redis.call('ZADD', KEYS[2], m[4], f)
              end
              return 1
              """);

  /**
   * Dead letter. KEYS: m, p, r, a, t, d, dp, dl. ARGV: 1 id, 2 fence (-1: none), 3 dead at, 4
   * reason. Returns 1 or 0.
   */
  static final LuaScripts.Script DEAD_LETTER =
      new LuaScripts.Script(
          "outbox_dead_letter",
          UNLINK
              + FENCED_ENTRY
              + """
              local payload = redis.call('HGET', KEYS[2], f) or ''
              local deadAt = tonumber(ARGV[3])
              redis.call('HDEL', KEYS[1], f)
              redis.call('HDEL', KEYS[2], f)
              redis.call('ZREM', KEYS[3], f)
              redis.call('ZREM', KEYS[4], f)
              unlink(KEYS[1], KEYS[3], KEYS[5], f, m)
              redis.call('HSET', KEYS[6], f, cmsgpack.pack({m[1], m[2], m[3], deadAt, ARGV[4], m[6]}))
              redis.call('HSET', KEYS[7], f, payload)
              redis.call('ZADD', KEYS[8], deadAt, f)
              return 1
              """);

  /**
   * Dead letters. KEYS: d, dp, dl. ARGV: 1 limit. Returns arrays of id, dedup key, payload,
   * attempts, enqueued at, dead at, reason.
   */
  static final LuaScripts.Script DEAD_LETTERS =
      new LuaScripts.Script(
          "outbox_dead_letters",
          """
          local ids = redis.call('ZRANGE', KEYS[3], 0, tonumber(ARGV[1]) - 1)
          local out = {}
          for _, f in ipairs(ids) do
            local raw = redis.call('HGET', KEYS[1], f)
            if raw then
              local d = cmsgpack.unpack(raw)
              out[#out + 1] = {f, d[1], redis.call('HGET', KEYS[2], f) or '', d[3], d[2], d[4], d[5]}
            end
          end
          return out
          """);

  /**
   * Dead letters newest first. KEYS: d, dp, dl. ARGV: 1 highest dead-at (a ZREVRANGEBYSCORE bound,
   * '(' for exclusive), 2 lowest dead-at (a bound), 3 limit, 4 the page's position: a dead-at whose
   * entries are listed only below id ARGV[5] ('' for none). Returns arrays as {@link
   * #DEAD_LETTERS}, newest first (ties: highest id first; ids are fixed-width, so by member).
   */
  static final LuaScripts.Script DEAD_LETTERS_NEWEST =
      new LuaScripts.Script(
          "outbox_dead_letters_newest",
          """
          local limit = tonumber(ARGV[3])
          local atPos, idPos = tonumber(ARGV[4]), tonumber(ARGV[5])
          local out = {}
          local offset = 0
          while #out < limit do
            local rows = redis.call('ZREVRANGEBYSCORE', KEYS[3], ARGV[1], ARGV[2], 'WITHSCORES',
                'LIMIT', offset, limit)
            if #rows == 0 then
              break
            end
            for i = 1, #rows, 2 do
              local f = rows[i]
              if #out < limit and not (atPos and tonumber(rows[i + 1]) == atPos
                  and tonumber(f) >= idPos) then
                local raw = redis.call('HGET', KEYS[1], f)
                if raw then
                  local d = cmsgpack.unpack(raw)
                  out[#out + 1] = {f, d[1], redis.call('HGET', KEYS[2], f) or '', d[3], d[2], d[4], d[5]}
                end
              end
            end
            offset = offset + #rows / 2
          end
          return out
          """);

  /**
   * One dead letter. KEYS: d, dp. ARGV: 1 id. Returns an array as {@link #DEAD_LETTERS}, or an
   * empty one if there is none.
   */
  static final LuaScripts.Script FIND_DEAD_LETTER =
      new LuaScripts.Script(
          "outbox_find_dead_letter",
          """
          local f = ARGV[1]
          local raw = redis.call('HGET', KEYS[1], f)
          if not raw then
            return {}
          end
          local d = cmsgpack.unpack(raw)
          return {f, d[1], redis.call('HGET', KEYS[2], f) or '', d[3], d[2], d[4], d[5]}
          """);

  /**
   * Requeue a dead letter. KEYS: seq, m, p, r, a, t, d, dp, dl. ARGV: 1 id, 2 now. Appends the dead
   * letter's key, payload and ordering key as a new, untried entry due now (behind the entries of
   * its ordering key, if any) and deletes the dead letter. Returns the new id, or -1 if there is no
   * such dead letter.
   */
  static final LuaScripts.Script REQUEUE_DEAD_LETTER =
      new LuaScripts.Script(
          "outbox_requeue_dead_letter",
          APPEND
              + """
              local f = ARGV[1]
              local raw = redis.call('HGET', KEYS[7], f)
              if not raw then
                return -1
              end
              local d = cmsgpack.unpack(raw)
              local payload = redis.call('HGET', KEYS[8], f) or ''
              redis.call('HDEL', KEYS[7], f)
              redis.call('HDEL', KEYS[8], f)
              redis.call('ZREM', KEYS[9], f)
              return append(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], d[1], payload,
                  d[6] or '', tonumber(ARGV[2]))
              """);

  /** Purge one dead letter. KEYS: d, dp, dl. ARGV: 1 id. Returns 1 or 0. */
  static final LuaScripts.Script PURGE_DEAD_LETTER =
      new LuaScripts.Script(
          "outbox_purge_dead_letter",
          """
          local n = redis.call('HDEL', KEYS[1], ARGV[1])
          redis.call('HDEL', KEYS[2], ARGV[1])
          redis.call('ZREM', KEYS[3], ARGV[1])
          return n
          """);

  /** Purge every dead letter of a queue. KEYS: d, dp, dl. Returns how many there were. */
  static final LuaScripts.Script PURGE_DEAD_LETTERS =
      new LuaScripts.Script(
          "outbox_purge_dead_letters",
          """
          local n = redis.call('HLEN', KEYS[1])
          redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
          return n
          """);

  /**
   * Pending. KEYS: m, p, a. ARGV: 1 limit. Returns arrays of id, dedup key, payload, attempts,
   * enqueued at, available at (0: never claimed), last error (nil if none).
   */
  static final LuaScripts.Script PENDING =
      new LuaScripts.Script(
          "outbox_pending",
          """
          local ids = redis.call('ZRANGE', KEYS[3], 0, tonumber(ARGV[1]) - 1)
          local out = {}
          for _, f in ipairs(ids) do
            local raw = redis.call('HGET', KEYS[1], f)
            if raw then
              local m = cmsgpack.unpack(raw)
              out[#out + 1] = {f, m[1], redis.call('HGET', KEYS[2], f) or '', m[3], m[2], m[4], m[7]}
            end
          end
          return out
          """);

  /** Every outbox script, in a fixed order. */
  static final List<LuaScripts.Script> ALL =
      List.of(
          COMMIT_AND_ENQUEUE,
          CLAIM,
          ACKNOWLEDGE,
          RESCHEDULE,
          DEAD_LETTER,
          DEAD_LETTERS,
          DEAD_LETTERS_NEWEST,
          FIND_DEAD_LETTER,
          REQUEUE_DEAD_LETTER,
          PURGE_DEAD_LETTER,
          PURGE_DEAD_LETTERS,
          PENDING);

  /** Runs a script: by SHA, again by text after a NOSCRIPT; maps failures. */
  interface Runner {
    <T> T run(
        LuaScripts.Script script,
        ScriptOutputType type,
        byte[][] keys,
        byte[][] args,
        String what,
        byte[] firstKey);
  }

  private final String prefix;
  private final boolean cluster;
  private final Runner runner;
  private final String description;

  RedisOutbox(String prefix, boolean cluster, Runner runner, String description) {
    this.prefix = prefix;
    this.cluster = cluster;
    this.runner = runner;
    this.description = description;
  }

  /**
   * Whether this outbox works here: always on standalone and Sentinel; on a cluster only if the
   * prefix has a hash tag, so that the dedup keys and the outbox share one slot.
   */
  static boolean supported(String prefix, boolean cluster) {
    return !cluster || hasHashTag(prefix);
  }

  /** Whether a key starting with {@code prefix} hashes by a tag inside the prefix. */
  static boolean hasHashTag(String prefix) {
    int open = prefix.indexOf('{');
    if (open < 0) {
      return false;
    }
    int close = prefix.indexOf('}', open + 1);
    return close > open + 1;
  }

  /** The keys of one queue. */
  private final class QueueKeys {
    final byte[] seq;
    final byte[] m;
    final byte[] p;
    final byte[] r;
    final byte[] a;
    final byte[] t;
    final byte[] d;
    final byte[] dp;
    final byte[] dl;

    QueueKeys(String queue) {
      if (queue.indexOf('{') >= 0 || queue.indexOf('}') >= 0) {
        throw new IllegalArgumentException(
            "the Redis outbox cannot take queue name '"
                + queue
                + "': '{' and '}' would change its hash tag; use a pipeline id without them");
      }
      String base = prefix + "outbox:{" + queue + "}:";
      seq = bytes(base + "seq");
      m = bytes(base + "m");
      p = bytes(base + "p");
      r = bytes(base + "r");
      a = bytes(base + "a");
      t = bytes(base + "t");
      d = bytes(base + "d");
      dp = bytes(base + "dp");
      dl = bytes(base + "dl");
    }
  }

  private void checkSupported(String what) {
    if (!supported(prefix, cluster)) {
      throw new IdemConfigException(
          what
              + " on "
              + description
              + ": on a Redis Cluster the outbox needs the dedup keys and the outbox in one slot,"
              + " so the prefix must carry a hash tag, e.g. prefix 'idem:{orders}:' (every key of"
              + " the store then lives on one shard); or use a standalone or Sentinel Redis");
    }
  }

  SettleResult commitAndEnqueue(
      CommitRequest c, byte[] dedupKey, List<OutboxMessage> messages, byte[][] commitArgs) {
    checkSupported("commitAndEnqueue");
    byte[][] keys = new byte[1 + 6 * messages.size()][];
    byte[][] args = new byte[commitArgs.length + 3 * messages.size()][];
    keys[0] = dedupKey;
    System.arraycopy(commitArgs, 0, args, 0, commitArgs.length);
    int slot = cluster ? SlotHash.getSlot(dedupKey) : 0;
    for (int i = 0; i < messages.size(); i++) {
      OutboxMessage message = messages.get(i);
      QueueKeys q = new QueueKeys(message.queue());
      if (cluster && SlotHash.getSlot(q.seq) != slot) {
        throw new IdemConfigException(
            "commitAndEnqueue on "
                + description
                + ": the dedup key and outbox queue '"
                + message.queue()
                + "' hash to different cluster slots; give the store a prefix with a hash tag");
      }
      keys[1 + 6 * i] = q.seq;
      keys[2 + 6 * i] = q.m;
      keys[3 + 6 * i] = q.p;
      keys[4 + 6 * i] = q.r;
      keys[5 + 6 * i] = q.a;
      keys[6 + 6 * i] = q.t;
      String orderingKey = message.orderingKey();
      args[commitArgs.length + 3 * i] = message.payload();
      args[commitArgs.length + 3 * i + 1] = message.key().toBytes();
      args[commitArgs.length + 3 * i + 2] = orderingKey == null ? EMPTY : bytes(orderingKey);
    }
    Long reply =
        runner.run(
            COMMIT_AND_ENQUEUE, ScriptOutputType.INTEGER, keys, args, "commitAndEnqueue", dedupKey);
    if (reply != null && reply == 1) {
      return SettleResult.APPLIED;
    }
    if (reply != null && reply == 0) {
      return SettleResult.STALE;
    }
    throw RedisErrors.unexpectedReply("commitAndEnqueue", reply, description);
  }

  List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    if (max < 1 || claimMillis < 1) {
      throw new IllegalArgumentException(
          "claim needs max >= 1 and claimMillis >= 1, got " + max + " and " + claimMillis);
    }
    checkSupported("claim");
    QueueKeys q = new QueueKeys(queue);
    long until = Math.min(MAX_TIME, saturatingAdd(nowMillis, claimMillis));
    List<Object> reply =
        runner.run(
            CLAIM,
            ScriptOutputType.MULTI,
            new byte[][] {q.m, q.p, q.r},
            new byte[][] {decimal(nowMillis), decimal(max), decimal(until)},
            "claim",
            q.m);
    List<OutboxRecord> out = new ArrayList<>(reply.size());
    for (Object o : reply) {
      List<?> row = row(o, 6, "claim");
      out.add(
          new OutboxRecord(
              id(row.get(0)),
              queue,
              DedupKey.ofDigest(bytesOf(row.get(1))),
              bytesOf(row.get(2)),
              (int) number(row.get(3)),
              number(row.get(4)),
              textOrNull(row.get(5))));
    }
    out.sort(Comparator.comparingLong(OutboxRecord::id));
    return out;
  }

  boolean acknowledge(String queue, long id, int claim) {
    checkSupported("acknowledge");
    QueueKeys q = new QueueKeys(queue);
    return applied(
        runner.run(
            ACKNOWLEDGE,
            ScriptOutputType.INTEGER,
            new byte[][] {q.m, q.p, q.r, q.a, q.t},
            new byte[][] {field(id), decimal(claim)},
            "acknowledge",
            q.m),
        "acknowledge");
  }

  boolean reschedule(String queue, long id, int claim, long notBeforeMillis, String error) {
    Objects.requireNonNull(error, "error");
    checkSupported("reschedule");
    QueueKeys q = new QueueKeys(queue);
    return applied(
        runner.run(
            RESCHEDULE,
            ScriptOutputType.INTEGER,
            new byte[][] {q.m, q.r},
            new byte[][] {
              field(id), decimal(claim), decimal(clampTime(notBeforeMillis)), bytes(error)
            },
            "reschedule",
            q.m),
        "reschedule");
  }

  boolean deadLetter(String queue, long id, int claim, String reason, long nowMillis) {
    Objects.requireNonNull(reason, "reason");
    checkSupported("deadLetter");
    QueueKeys q = new QueueKeys(queue);
    return applied(
        runner.run(
            DEAD_LETTER,
            ScriptOutputType.INTEGER,
            new byte[][] {q.m, q.p, q.r, q.a, q.t, q.d, q.dp, q.dl},
            new byte[][] {field(id), decimal(claim), decimal(clampTime(nowMillis)), bytes(reason)},
            "deadLetter",
            q.m),
        "deadLetter");
  }

  List<DeadLetter> deadLetters(String queue, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("deadLetters needs limit >= 1, got " + limit);
    }
    checkSupported("deadLetters");
    QueueKeys q = new QueueKeys(queue);
    List<Object> reply =
        runner.run(
            DEAD_LETTERS,
            ScriptOutputType.MULTI,
            new byte[][] {q.d, q.dp, q.dl},
            new byte[][] {decimal(limit)},
            "deadLetters",
            q.d);
    List<DeadLetter> out = new ArrayList<>(reply.size());
    for (Object o : reply) {
      out.add(deadLetter(queue, row(o, 7, "deadLetters")));
    }
    return out;
  }

  List<DeadLetter> deadLetters(String queue, DeadLetterQuery query) {
    Objects.requireNonNull(query, "query");
    checkSupported("deadLetters");
    QueueKeys q = new QueueKeys(queue);
    // The upper bound: until (exclusive), or the page's position (inclusive, its ties cut by id)
    // when that is lower. Stored times lie in [-MAX_TIME, MAX_TIME]; bounds past them are infinite.
    byte[] high;
    byte[] atPosition = EMPTY;
    byte[] idPosition = EMPTY;
    if (query.beforeDeadAtMillis() < query.untilMillis()) {
      high = bound(query.beforeDeadAtMillis(), "");
      atPosition = decimal(query.beforeDeadAtMillis());
      idPosition = decimal(query.beforeId());
    } else {
      high = bound(query.untilMillis(), "(");
    }
    byte[] low = bound(query.sinceMillis(), "");
    List<Object> reply =
        runner.run(
            DEAD_LETTERS_NEWEST,
            ScriptOutputType.MULTI,
            new byte[][] {q.d, q.dp, q.dl},
            new byte[][] {high, low, decimal(query.limit()), atPosition, idPosition},
            "deadLetters",
            q.d);
    List<DeadLetter> out = new ArrayList<>(reply.size());
    for (Object o : reply) {
      out.add(deadLetter(queue, row(o, 7, "deadLetters")));
    }
    out.sort(DeadLetterQuery.NEWEST_FIRST);
    return out;
  }

  Optional<DeadLetter> findDeadLetter(String queue, long id) {
    checkSupported("findDeadLetter");
    QueueKeys q = new QueueKeys(queue);
    List<Object> reply =
        runner.run(
            FIND_DEAD_LETTER,
            ScriptOutputType.MULTI,
            new byte[][] {q.d, q.dp},
            new byte[][] {field(id)},
            "findDeadLetter",
            q.d);
    return reply.isEmpty()
        ? Optional.empty()
        : Optional.of(deadLetter(queue, row(reply, 7, "findDeadLetter")));
  }

  OptionalLong requeueDeadLetter(String queue, long id, long nowMillis) {
    checkSupported("requeueDeadLetter");
    QueueKeys q = new QueueKeys(queue);
    Long reply =
        runner.run(
            REQUEUE_DEAD_LETTER,
            ScriptOutputType.INTEGER,
            new byte[][] {q.seq, q.m, q.p, q.r, q.a, q.t, q.d, q.dp, q.dl},
            new byte[][] {field(id), decimal(clampTime(nowMillis))},
            "requeueDeadLetter",
            q.m);
    if (reply == null || reply == 0 || reply < -1) {
      throw RedisErrors.unexpectedReply("requeueDeadLetter", reply, description);
    }
    return reply == -1 ? OptionalLong.empty() : OptionalLong.of(reply);
  }

  boolean purgeDeadLetter(String queue, long id) {
    checkSupported("purgeDeadLetter");
    QueueKeys q = new QueueKeys(queue);
    return applied(
        runner.run(
            PURGE_DEAD_LETTER,
            ScriptOutputType.INTEGER,
            new byte[][] {q.d, q.dp, q.dl},
            new byte[][] {field(id)},
            "purgeDeadLetter",
            q.d),
        "purgeDeadLetter");
  }

  long purgeDeadLetters(String queue) {
    checkSupported("purgeDeadLetters");
    QueueKeys q = new QueueKeys(queue);
    Long reply =
        runner.run(
            PURGE_DEAD_LETTERS,
            ScriptOutputType.INTEGER,
            new byte[][] {q.d, q.dp, q.dl},
            new byte[0][],
            "purgeDeadLetters",
            q.d);
    if (reply == null || reply < 0) {
      throw RedisErrors.unexpectedReply("purgeDeadLetters", reply, description);
    }
    return reply;
  }

  private DeadLetter deadLetter(String queue, List<?> row) {
    return new DeadLetter(
        id(row.get(0)),
        queue,
        DedupKey.ofDigest(bytesOf(row.get(1))),
        bytesOf(row.get(2)),
        (int) number(row.get(3)),
        number(row.get(4)),
        number(row.get(5)),
        new String(bytesOf(row.get(6)), StandardCharsets.UTF_8));
  }

  /** A score bound for ZRANGEBYSCORE: infinite past the stored times, else {@code open} + value. */
  private static byte[] bound(long millis, String open) {
    if (millis > MAX_TIME) {
      return bytes("+inf");
    }
    if (millis < -MAX_TIME) {
      return bytes("-inf");
    }
    return bytes(open + millis);
  }

  List<PendingEntry> pending(String queue, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("pending needs limit >= 1, got " + limit);
    }
    checkSupported("pending");
    QueueKeys q = new QueueKeys(queue);
    List<Object> reply =
        runner.run(
            PENDING,
            ScriptOutputType.MULTI,
            new byte[][] {q.m, q.p, q.a},
            new byte[][] {decimal(limit)},
            "pending",
            q.m);
    List<PendingEntry> out = new ArrayList<>(reply.size());
    for (Object o : reply) {
      List<?> row = row(o, 7, "pending");
      long enqueued = number(row.get(4));
      long available = number(row.get(5));
      out.add(
          new PendingEntry(
              id(row.get(0)),
              queue,
              DedupKey.ofDigest(bytesOf(row.get(1))),
              bytesOf(row.get(2)),
              (int) number(row.get(3)),
              enqueued,
              available == 0 ? enqueued : available,
              textOrNull(row.get(6))));
    }
    return out;
  }

  /** The key whose cardinality is the depth of a queue. */
  byte[] depthKey(String queue) {
    checkSupported("depth");
    return new QueueKeys(queue).a;
  }

  // --- decoding ----------------------------------------------------------------------------------

  private boolean applied(@Nullable Long reply, String what) {
    if (reply != null && (reply == 0 || reply == 1)) {
      return reply == 1;
    }
    throw RedisErrors.unexpectedReply(what, reply, description);
  }

  private List<?> row(Object o, int size, String what) {
    if (o instanceof List<?> row && row.size() >= size - 1) {
      // A trailing nil (no last error) may be left out of the reply.
      if (row.size() == size) {
        return row;
      }
      List<Object> padded = new ArrayList<>(row);
      padded.add(null);
      return padded;
    }
    throw RedisErrors.unexpectedReply(what, o, description);
  }

  private long id(Object o) {
    return Long.parseLong(new String(bytesOf(o), StandardCharsets.US_ASCII));
  }

  private byte[] bytesOf(@Nullable Object o) {
    if (o instanceof byte[] b) {
      return b;
    }
    throw RedisErrors.unexpectedReply("an outbox script", o, description);
  }

  private long number(@Nullable Object o) {
    if (o instanceof Long l) {
      return l;
    }
    throw RedisErrors.unexpectedReply("an outbox script", o, description);
  }

  private static @Nullable String textOrNull(@Nullable Object o) {
    return o instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : null;
  }

  private static byte[] field(long id) {
    return bytes(String.format("%016d", id));
  }

  private static long clampTime(long millis) {
    return Math.max(-MAX_TIME, Math.min(MAX_TIME, millis));
  }

  private static long saturatingAdd(long a, long b) {
    long sum = a + b;
    return ((a ^ sum) & (b ^ sum)) < 0 ? Long.MAX_VALUE : sum;
  }

  private static byte[] decimal(long value) {
    return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}

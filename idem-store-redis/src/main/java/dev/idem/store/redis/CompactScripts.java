package dev.idem.store.redis;

import java.util.List;

/**
 * The Lua scripts of the compact layout ({@link CompactLayout}), all in one place. Each runs on one
 * shard of one scope: {@code KEYS[1]} is the shard's hash (field = the key's 32-byte digest, value
 * = its {@link CompactFormat} entry, plus the shard's meta field {@code m}); the shard's result
 * keys share its hash tag, so the script touches one cluster slot. Like {@link LuaScripts} they
 * implement one transition of {@link dev.idem.spi.DedupStateMachine} each, judge leases and TTLs by
 * the caller's {@code now} and answer in the same shapes, so the store decodes both layouts alike.
 *
 * <p>A key is in exactly one place, its shard's hash, so every script finds it (or proves it
 * absent) with one lookup: {@code HMGET m <field>} in the scripts that write, {@code HGET} in the
 * others. The value is {@link CompactFormat}'s (1-based offsets here: byte 1 the flags, 2-9 the
 * token, 10-17 since, 18-25 the deadline, 26-57 the fingerprint).
 *
 * <p>The meta field {@code m} (24 bytes, three big-endian int64) holds: when the next sweep is due
 * by the callers' clock, when the last sweep ran by Redis's clock ({@code TIME}), and the hash's
 * end by the callers' clock. It is the hash's first field (written with the hash's first entry), so
 * reading it costs one listpack entry.
 *
 * <ul>
 *   <li><b>Expiry.</b> The hash's end covers every deadline written into it plus one sweep
 *       interval, and only ever grows ({@code PEXPIRE} when a deadline passes the end, {@code
 *       PERSIST} for a deadline that never comes), so a live entry is never freed by Redis; a shard
 *       that gets no more writes expires as a whole about one interval after its last deadline.
 *   <li><b>Sweep.</b> A reserve that inserts a key also removes the shard's dead entries (deadline
 *       passed by the caller's clock) when a sweep interval has passed since the last sweep by both
 *       the caller's clock and Redis's clock: one {@code HGETALL} and one {@code HDEL} per interval
 *       and shard. Redis's clock keeps a caller clock that jumps (or a test's manual clock) from
 *       sweeping more often than once per interval of real time.
 * </ul>
 *
 * <p>Common ARGV: 1 the field (32 bytes), 2 now (decimal milliseconds), 3 the name of the key's
 * result key (for results too long to keep inline); writers: 4 the sweep interval (decimal
 * milliseconds, an eighth of the window or lease, at least 1,024).
 */
final class CompactScripts {
  private CompactScripts() {}

  /** Finds the key with HGET (scripts that only read or delete). */
  private static final String READ =
      """
      local h = KEYS[1]
      local field = ARGV[1]
      local now = tonumber(ARGV[2])
      local v = redis.call('HGET', h, field)
      """;

  /**
   * Finds the meta field and the key with one HMGET (scripts that write). No local functions: the
   * scripts run once per key, and every closure is an allocation per call.
   */
  private static final String WRITE =
      """
      local h = KEYS[1]
      local field = ARGV[1]
      local now = tonumber(ARGV[2])
      local interval = tonumber(ARGV[4])
      local got = redis.call('HMGET', h, 'm', field)
      local meta, v = got[1], got[2]
      local sweepAt, sweptAt, hend = 0, 0, 0
      if meta then
        if #meta ~= 24 then
          return redis.error_reply('IDEM_BAD_VALUE the meta field is not an Idem compact shard')
        end
        sweepAt, sweptAt, hend = struct.unpack('>i8>i8>i8', meta)
      end
      local dirty = false
      local nv, d, reply = false, 0, false
      """;

  /** Checks the value found and decodes its flags (every script, after READ or WRITE). */
  private static final String DECODE =
      """
      local committed, hasFp, inline, external = false, false, false, false
      if v then
        local flags = string.byte(v, 1) - 192
        if #v < 25 or flags < 0 or flags > 15 then
          return redis.error_reply('IDEM_BAD_VALUE the value is not an Idem compact entry')
        end
        committed = flags % 2 == 1
        hasFp = flags % 4 >= 2
        inline = flags % 8 >= 4
        external = flags >= 8
      end
      """;

  /**
   * Writes {@code nv} (deadline {@code d}) under the field: grows the hash's end to cover {@code
   * d}, writes the meta field with the hash's first entry or when it changed, and answers {@code
   * reply}.
   */
  private static final String PUT =
      """
      local expire = false
      if d > hend then
        if d >= 9007199254740992 or d - now > 3162240000000 then
          hend = 9007199254740992
          expire = 'persist'
        else
          hend = d + interval
          local px = hend - now
          if px < 1 then
            px = 1
          end
          expire = string.format('%.0f', px)
        end
        dirty = true
      end
      if not meta then
        sweepAt = now + interval
        local t = redis.call('TIME')
        sweptAt = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        redis.call('HSET', h, 'm', struct.pack('>i8>i8>i8', sweepAt, sweptAt, hend), field, nv)
      elseif dirty then
        redis.call('HSET', h, field, nv, 'm', struct.pack('>i8>i8>i8', sweepAt, sweptAt, hend))
      else
        redis.call('HSET', h, field, nv)
      end
      if expire == 'persist' then
        redis.call('PERSIST', h)
      elseif expire then
        redis.call('PEXPIRE', h, expire)
      end
      return reply
      """;

  /**
   * Reserve. ARGV 5: the complete in-flight value to write if acquired; 6: the request's
   * fingerprint (empty: none); 7: the sliding deadline to set on a duplicate hit as 8 bytes (empty:
   * no refresh); 8: its PX for a result key (empty: no expiry). Answers as {@link
   * LuaScripts#RESERVE}. Sweeps the shard's dead entries when it inserts and a sweep is due.
   */
  static final LuaScripts.Script RESERVE =
      new LuaScripts.Script(
          "compact-reserve",
          WRITE
              + DECODE
              + """
              local replaced = 0
              if v then
                if now < struct.unpack('>i8', v, 18) then
                  if not committed then
                    return {2, string.sub(v, 18, 25)}
                  end
                  if hasFp and ARGV[6] ~= '' and string.sub(v, 26, 57) ~= ARGV[6] then
                    return {3, string.sub(v, 10, 17)}
                  end
                  local deadline = string.sub(v, 18, 25)
                  local result = false
                  if inline then
                    result = string.sub(v, hasFp and 58 or 26)
                  elseif external then
                    result = redis.call('GET', ARGV[3])
                    if not result then
                      return redis.error_reply('IDEM_BAD_VALUE the result key is missing')
                    end
                  end
                  if ARGV[7] == '' or ARGV[7] == deadline then
                    return {1, string.sub(v, 10, 17), deadline, result}
                  end
                  if external then
                    if ARGV[8] == '' then
                      redis.call('PERSIST', ARGV[3])
                    else
                      redis.call('PEXPIRE', ARGV[3], ARGV[8])
                    end
                  end
                  nv = string.sub(v, 1, 17) .. ARGV[7] .. string.sub(v, 26)
                  d = struct.unpack('>i8', ARGV[7], 1)
                  reply = {1, string.sub(v, 10, 17), ARGV[7], result}
                else
                  replaced = committed and 2 or 1
                  if external then
                    redis.call('DEL', ARGV[3])
                  end
                end
              end
              if not nv then
                if meta and now >= sweepAt then
                  local t = redis.call('TIME')
                  local rnow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
                  if rnow >= sweptAt + interval then
                    local all = redis.call('HGETALL', h)
                    local dead = {}
                    for i = 1, #all, 2 do
                      local f, x = all[i], all[i + 1]
                      if #f == 32 and f ~= field and #x >= 25
                          and now >= struct.unpack('>i8', x, 18) then
                        dead[#dead + 1] = f
                      end
                    end
                    if #dead > 0 then
                      redis.call('HDEL', h, unpack(dead))
                    end
                    sweptAt = rnow
                  end
                  sweepAt = now + interval
                  dirty = true
                elseif meta and now + interval < sweepAt then
                  sweepAt = now + interval
                  dirty = true
                end
                nv = ARGV[5]
                d = struct.unpack('>i8', ARGV[5], 18)
                reply = {0, replaced}
              end
              """
              + PUT);

  /**
   * Commit. ARGV 5: the token (8 bytes); 6: the new since and deadline (16 bytes); 7: {@code 1} if
   * a result is given else {@code 0}; 8: the result (empty if none); 9: the PX for a result key
   * (empty: no expiry). Answers 1 (applied, or already committed with this token) or 0 (stale).
   */
  static final LuaScripts.Script COMMIT =
      new LuaScripts.Script(
          "compact-commit",
          WRITE
              + DECODE
              + """
              if not v or string.sub(v, 2, 9) ~= ARGV[5] then
                return 0
              end
              local alive = now < struct.unpack('>i8', v, 18)
              if committed then
                return alive and 1 or 0
              end
              if not alive then
                return 0
              end
              local f = 193
              local fp = ''
              if hasFp then
                f = f + 2
                fp = string.sub(v, 26, 57)
              end
              local tail = ''
              if ARGV[7] == '1' then
                if 25 + #fp + #ARGV[8] <= 64 then
                  f = f + 4
                  tail = ARGV[8]
                else
                  f = f + 8
                  if ARGV[9] == '' then
                    redis.call('SET', ARGV[3], ARGV[8])
                  else
                    redis.call('SET', ARGV[3], ARGV[8], 'PX', ARGV[9])
                  end
                end
              end
              nv = string.char(f) .. ARGV[5] .. ARGV[6] .. fp .. tail
              d = struct.unpack('>i8', ARGV[6], 9)
              reply = 1
              """
              + PUT);

  /** Release. ARGV 4: the token (8 bytes). Answers 1 (the key was removed) or 0 (stale). */
  static final LuaScripts.Script RELEASE =
      new LuaScripts.Script(
          "compact-release",
          READ
              + DECODE
              + """
              if not v or committed or string.sub(v, 2, 9) ~= ARGV[4]
                  or now >= struct.unpack('>i8', v, 18) then
                return 0
              end
              redis.call('HDEL', h, field)
              return 1
              """);

  /**
   * Extend. ARGV 5: the token (8 bytes); 6: the requested deadline (8 bytes). Answers as {@link
   * LuaScripts#EXTEND}.
   */
  static final LuaScripts.Script EXTEND =
      new LuaScripts.Script(
          "compact-extend",
          WRITE
              + DECODE
              + """
              if not v or committed or string.sub(v, 2, 9) ~= ARGV[5] then
                return 0
              end
              local deadline = struct.unpack('>i8', v, 18)
              if now >= deadline then
                return 0
              end
              local u = struct.unpack('>i8', ARGV[6], 1)
              if u <= deadline then
                return 1
              end
              nv = string.sub(v, 1, 17) .. ARGV[6] .. string.sub(v, 26)
              d = u
              reply = 1
              """
              + PUT);

  /** Inspect. Answers {} (absent), {value} or {value, result} (a result in its own key). */
  static final LuaScripts.Script INSPECT =
      new LuaScripts.Script(
          "compact-inspect",
          READ
              + DECODE
              + """
              if not v then
                return {}
              end
              if external then
                return {v, redis.call('GET', ARGV[3])}
              end
              return {v}
              """);

  /** Forget. Answers 1 (an entry was removed, live or dead) or 0 (none was there). */
  static final LuaScripts.Script FORGET =
      new LuaScripts.Script(
          "compact-forget",
          READ
              + DECODE
              + """
              if not v then
                return 0
              end
              redis.call('HDEL', h, field)
              if external then
                redis.call('DEL', ARGV[3])
              end
              return 1
              """);

  /** Every script, in a fixed order. */
  static final List<LuaScripts.Script> ALL =
      List.of(RESERVE, COMMIT, RELEASE, EXTEND, INSPECT, FORGET);
}

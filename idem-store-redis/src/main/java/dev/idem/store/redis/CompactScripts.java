package dev.idem.store.redis;

import java.util.List;

/**
 * The Lua scripts of the compact layout ({@link CompactLayout}), all in one place. Each runs on one
 * shard of one scope: {@code KEYS[1]} is the shard's directory, a sorted set of its live bucket
 * hashes scored by the time each bucket ends; every bucket hash and the shard's result keys share
 * the directory's hash tag, so the script touches one cluster slot. Like {@link LuaScripts} they
 * implement one transition of {@link dev.idem.spi.DedupStateMachine} each, judge leases and TTLs by
 * the caller's {@code now} and answer in the same shapes, so the store decodes both layouts alike.
 *
 * <p>Every script starts by finding the key: it asks each bucket of the directory for the field
 * (the key's 32-byte digest) and stops at the first hit; a key lives in at most one bucket, because
 * every write first removes it from where it was. A bucket whose end has passed and whose hash
 * Redis has already dropped leaves the directory on the way.
 *
 * <p>Writes go through {@code put}: the entry stays in its bucket while the bucket outlives the new
 * deadline and ends no later than the target bucket the caller computed; otherwise it moves to the
 * target. A bucket hash gets its {@code PEXPIRE} (the bucket's end) when it is created, and the
 * directory's expiry only ever grows to cover its longest-lived bucket, so a live entry is never
 * freed by Redis before its deadline. The value is {@link CompactFormat}'s (1-based offsets here:
 * byte 1 the flags, 2-9 the token, 10-17 since, 18-25 the deadline, 26-57 the fingerprint).
 *
 * <p>Common ARGV: 1 the field (32 bytes), 2 now (decimal milliseconds), 3 the name of the key's
 * result key (for results too long to keep inline), 4 the bucket to probe first (where the caller
 * expects the key: the bucket a commit targets; empty: none), 5 that bucket's end. A key found
 * there needs no look at the directory: a commit is one {@code HGET} and one {@code HSET}.
 *
 * <p>A bucket hash that Redis dropped because its last entry left is created again by the next
 * write into it; {@code put} sees that (a new field in a hash of one) and sets its expiry again.
 */
final class CompactScripts {
  private CompactScripts() {}

  /** Finds the key; defines {@code put}; every script starts with it. */
  private static final String PREAMBLE =
      """
      local dir = KEYS[1]
      local base = string.sub(dir, 1, -3)
      local field = ARGV[1]
      local now = tonumber(ARGV[2])
      local rkey = ARGV[3]
      local hint = ARGV[4]
      local members = false
      local bk, bm, bend, v = false, false, 0, false
      local function probe(i)
        local m = members[i]
        local k = base .. ':' .. m
        local x = redis.call('HGET', k, field)
        if x then
          bk, bm, bend, v = k, m, tonumber(members[i + 1]), x
          return true
        end
        if tonumber(members[i + 1]) <= now and redis.call('EXISTS', k) == 0 then
          redis.call('ZREM', dir, m)
        end
        return false
      end
      if hint ~= '' then
        local x = redis.call('HGET', base .. ':' .. hint, field)
        if x then
          bk, bm, bend, v = base .. ':' .. hint, hint, tonumber(ARGV[5]), x
        end
      end
      if not v then
        members = redis.call('ZRANGE', dir, 0, -1, 'WITHSCORES')
        for i = 1, #members, 2 do
          if members[i] ~= hint and probe(i) then
            break
          end
        end
      end
      local flags = 0
      if v then
        flags = string.byte(v, 1) - 192
        if #v < 25 or flags < 0 or flags > 15 then
          return redis.error_reply('IDEM_BAD_VALUE the value is not an Idem compact entry')
        end
      end
      local function has(bit)
        return math.floor(flags / bit) % 2 == 1
      end
      local function put(nv, d, m, e, px)
        if bk and (m == bm or (d < bend and bend <= tonumber(e))) then
          redis.call('HSET', bk, field, nv)
          return
        end
        if bk then
          redis.call('HDEL', bk, field)
        end
        local k = base .. ':' .. m
        if redis.call('HSET', k, field, nv) == 1 and redis.call('HLEN', k) == 1 then
          redis.call('ZADD', dir, e, m)
          if px == '' then
            redis.call('PERSIST', dir)
          else
            redis.call('PEXPIRE', k, px)
            local t = redis.call('PTTL', dir)
            if (t >= 0 and t < tonumber(px)) or (t == -1 and redis.call('ZCARD', dir) == 1) then
              redis.call('PEXPIRE', dir, px)
            end
          end
        end
      end
      local function expireResult(px)
        if px == '' then
          redis.call('PERSIST', rkey)
        else
          redis.call('PEXPIRE', rkey, px)
        end
      end
      """;

  /**
   * Reserve. ARGV 6: the complete in-flight value to write if acquired; 7, 8, 9: the bucket to put
   * it in (member, end, PX; empty PX: no expiry); 10: the request's fingerprint (empty: none); 11:
   * the sliding deadline to set on a duplicate hit as 8 bytes (empty: no refresh); 12, 13, 14: its
   * bucket; 15: its PX for a result key (empty: no expiry). Answers as {@link LuaScripts#RESERVE}.
   */
  static final LuaScripts.Script RESERVE =
      new LuaScripts.Script(
          "compact-reserve",
          PREAMBLE
              + """
              local replaced = 0
              if v then
                if now < struct.unpack('>i8', v, 18) then
                  if not has(1) then
                    return {2, string.sub(v, 18, 25)}
                  end
                  if has(2) and ARGV[10] ~= '' and string.sub(v, 26, 57) ~= ARGV[10] then
                    return {3, string.sub(v, 10, 17)}
                  end
                  local deadline = string.sub(v, 18, 25)
                  if ARGV[11] ~= '' and ARGV[11] ~= deadline then
                    put(string.sub(v, 1, 17) .. ARGV[11] .. string.sub(v, 26),
                        struct.unpack('>i8', ARGV[11], 1), ARGV[12], ARGV[13], ARGV[14])
                    if has(8) then
                      expireResult(ARGV[15])
                    end
                    deadline = ARGV[11]
                  end
                  local result = false
                  if has(4) then
                    result = string.sub(v, has(2) and 58 or 26)
                  elseif has(8) then
                    result = redis.call('GET', rkey)
                    if not result then
                      return redis.error_reply('IDEM_BAD_VALUE the result key is missing')
                    end
                  end
                  return {1, string.sub(v, 10, 17), deadline, result}
                end
                replaced = has(1) and 2 or 1
                if has(8) then
                  redis.call('DEL', rkey)
                end
              end
              put(ARGV[6], struct.unpack('>i8', ARGV[6], 18), ARGV[7], ARGV[8], ARGV[9])
              return {0, replaced}
              """);

  /**
   * Commit. ARGV 6: the token (8 bytes); 7: the new since and deadline (16 bytes); 8: {@code 1} if
   * a result is given else {@code 0}; 9: the result (empty if none); 10, 11, 12: the bucket of the
   * new deadline (member, end, PX); 13: the PX for a result key (empty: no expiry). Answers 1
   * (applied, or already committed with this token) or 0 (stale).
   */
  static final LuaScripts.Script COMMIT =
      new LuaScripts.Script(
          "compact-commit",
          PREAMBLE
              + """
              if not v or string.sub(v, 2, 9) ~= ARGV[6] then
                return 0
              end
              local alive = now < struct.unpack('>i8', v, 18)
              if has(1) then
                return alive and 1 or 0
              end
              if not alive then
                return 0
              end
              local f = 193
              local fp = ''
              if has(2) then
                f = f + 2
                fp = string.sub(v, 26, 57)
              end
              local tail = ''
              if ARGV[8] == '1' then
                if 25 + #fp + #ARGV[9] <= 64 then
                  f = f + 4
                  tail = ARGV[9]
                else
                  f = f + 8
                  if ARGV[13] == '' then
                    redis.call('SET', rkey, ARGV[9])
                  else
                    redis.call('SET', rkey, ARGV[9], 'PX', ARGV[13])
                  end
                end
              end
              put(string.char(f) .. ARGV[6] .. ARGV[7] .. fp .. tail,
                  struct.unpack('>i8', ARGV[7], 9), ARGV[10], ARGV[11], ARGV[12])
              return 1
              """);

  /** Release. ARGV 6: the token (8 bytes). Answers 1 (the key was removed) or 0 (stale). */
  static final LuaScripts.Script RELEASE =
      new LuaScripts.Script(
          "compact-release",
          PREAMBLE
              + """
              if not v or has(1) or string.sub(v, 2, 9) ~= ARGV[6]
                  or now >= struct.unpack('>i8', v, 18) then
                return 0
              end
              redis.call('HDEL', bk, field)
              return 1
              """);

  /**
   * Extend. ARGV 6: the token (8 bytes); 7: the requested deadline (8 bytes); 8, 9, 10: its bucket
   * (member, end, PX). Answers as {@link LuaScripts#EXTEND}.
   */
  static final LuaScripts.Script EXTEND =
      new LuaScripts.Script(
          "compact-extend",
          PREAMBLE
              + """
              if not v or has(1) or string.sub(v, 2, 9) ~= ARGV[6] then
                return 0
              end
              local deadline = struct.unpack('>i8', v, 18)
              if now >= deadline then
                return 0
              end
              local u = struct.unpack('>i8', ARGV[7], 1)
              if u > deadline then
                put(string.sub(v, 1, 17) .. ARGV[7] .. string.sub(v, 26), u, ARGV[8], ARGV[9], ARGV[10])
              end
              return 1
              """);

  /** Inspect. Answers {} (absent), {value} or {value, result} (a result in its own key). */
  static final LuaScripts.Script INSPECT =
      new LuaScripts.Script(
          "compact-inspect",
          PREAMBLE
              + """
              if not v then
                return {}
              end
              if has(8) then
                return {v, redis.call('GET', rkey)}
              end
              return {v}
              """);

  /** Forget. Answers 1 (an entry was removed, live or dead) or 0 (none was there). */
  static final LuaScripts.Script FORGET =
      new LuaScripts.Script(
          "compact-forget",
          PREAMBLE
              + """
              if not v then
                return 0
              end
              redis.call('HDEL', bk, field)
              if has(8) then
                redis.call('DEL', rkey)
              end
              return 1
              """);

  /** Every script, in a fixed order. */
  static final List<LuaScripts.Script> ALL =
      List.of(RESERVE, COMMIT, RELEASE, EXTEND, INSPECT, FORGET);
}

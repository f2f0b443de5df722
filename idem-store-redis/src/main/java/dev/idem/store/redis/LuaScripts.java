package dev.idem.store.redis;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * The store's Lua scripts, all in one place. Each runs on one key ({@code KEYS[1]}) and implements
 * one transition of {@link dev.idem.spi.DedupStateMachine} atomically. They judge leases and TTLs
 * by the caller's {@code now} ({@code ARGV[1]}, decimal milliseconds) and give Redis the relative
 * time left ({@code PX}) so it frees dead entries by itself.
 *
 * <p>The value is the packed v1 entry described in {@link EntryFormat} (1-based Lua offsets): byte
 * 1 the format version (1), byte 2 the state ({@code I} = 73 in flight, {@code C} = 67 committed),
 * 3-10 the token, 11-18 the since time, 19-26 the deadline (both big-endian int64 milliseconds), 27
 * the flags (1 = fingerprint present, 2 = result present), then the 32-byte fingerprint if present,
 * then the result if present.
 *
 * <p>A string value measured faster than a hash with short fields (one GET and one SET per new key
 * instead of HMGET, HSET and PEXPIRE) and smaller (112 against 144 bytes per key in MEMORY USAGE).
 */
final class LuaScripts {
  private LuaScripts() {}

  /** Reads and checks the entry; every script starts with it. */
  private static final String PREAMBLE =
      """
      local v = redis.call('GET', KEYS[1])
      if v and (#v < 27 or string.byte(v, 1) ~= 1
          or (string.byte(v, 2) ~= 73 and string.byte(v, 2) ~= 67)) then
        return redis.error_reply('IDEM_BAD_VALUE the value is not an Idem v1 entry')
      end
      local now = tonumber(ARGV[1])
      """;

  /**
   * Reserve. ARGV: 1 now, 2 the complete in-flight value to write if acquired, 3 its PX (empty: no
   * expiry), 4 the request's fingerprint (empty: none), 5 the sliding deadline to set on a
   * duplicate hit as 8 bytes (empty: no refresh), 6 its PX (empty: no expiry). Returns {0,
   * replaced} (acquired; 0 nothing, 1 expired lease, 2 expired key), {1, since, deadline, result}
   * (duplicate), {2, deadline} (in flight) or {3, since} (conflict); times as 8 bytes.
   */
  static final Script RESERVE =
      new Script(
          "reserve",
          PREAMBLE
              + """
              local replaced = 0
              if v then
                local state = string.byte(v, 2)
                if now < struct.unpack('>i8', v, 19) then
                  if state == 73 then
                    return {2, string.sub(v, 19, 26)}
                  end
                  local flags = string.byte(v, 27)
                  local hasFp = flags % 2 == 1
                  if hasFp and ARGV[4] ~= '' and string.sub(v, 28, 59) ~= ARGV[4] then
                    return {3, string.sub(v, 11, 18)}
                  end
                  local deadline = string.sub(v, 19, 26)
                  if ARGV[5] ~= '' and ARGV[5] ~= deadline then
                    redis.call('SETRANGE', KEYS[1], 18, ARGV[5])
                    if ARGV[6] == '' then
                      redis.call('PERSIST', KEYS[1])
                    else
                      redis.call('PEXPIRE', KEYS[1], ARGV[6])
                    end
                    deadline = ARGV[5]
                  end
                  local result = false
                  if flags >= 2 then
                    result = string.sub(v, hasFp and 60 or 28)
                  end
                  return {1, string.sub(v, 11, 18), deadline, result}
                end
                replaced = state == 73 and 1 or 2
              end
              if ARGV[3] == '' then
                redis.call('SET', KEYS[1], ARGV[2])
              else
                redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
              end
              return {0, replaced}
              """);

  /**
   * Commit. ARGV: 1 now, 2 the token (8 bytes), 3 the new since and deadline (16 bytes), 4 the PX
   * (empty: no expiry), 5 {@code 1} if a result is given else {@code 0}, 6 the result (empty if
   * none). Returns 1 (applied, or already committed with this token) or 0 (stale).
   */
  static final Script COMMIT =
      new Script(
          "commit",
          PREAMBLE
              + """
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
              return 1
              """);

  /** Release. ARGV: 1 now, 2 the token (8 bytes). Returns 1 (the key was deleted) or 0 (stale). */
  static final Script RELEASE =
      new Script(
          "release",
          PREAMBLE
              + """
              if not v or string.byte(v, 2) ~= 73 or string.sub(v, 3, 10) ~= ARGV[2]
                  or now >= struct.unpack('>i8', v, 19) then
                return 0
              end
              redis.call('DEL', KEYS[1])
              return 1
              """);

  /**
   * Extend (renew a lease). ARGV: 1 now, 2 the token (8 bytes), 3 the requested deadline (8 bytes),
   * 4 its PX (empty: no expiry). Returns 1 (the key is in flight under the token with a running
   * lease, which now runs until the later of its deadline and the requested one) or 0 (stale).
   */
  static final Script EXTEND =
      new Script(
          "extend",
          PREAMBLE
              + """
              if not v or string.byte(v, 2) ~= 73 or string.sub(v, 3, 10) ~= ARGV[2] then
                return 0
              end
              local deadline = struct.unpack('>i8', v, 19)
              if now >= deadline then
                return 0
              end
              if struct.unpack('>i8', ARGV[3], 1) > deadline then
                redis.call('SETRANGE', KEYS[1], 18, ARGV[3])
                if ARGV[4] == '' then
                  redis.call('PERSIST', KEYS[1])
                else
                  redis.call('PEXPIRE', KEYS[1], ARGV[4])
                end
              end
              return 1
              """);

  /** Every script, in a fixed order. */
  static final List<Script> ALL = List.of(RESERVE, COMMIT, RELEASE, EXTEND);

  /**
   * One script: its text and the SHA-1 digest that {@code EVALSHA} names it by.
   *
   * @param name a short name for error messages
   * @param body the Lua text
   * @param bodyBytes the text as UTF-8, for {@code EVAL} after a {@code NOSCRIPT}
   * @param sha the lowercase hex SHA-1 of the text
   */
  record Script(String name, String body, byte[] bodyBytes, String sha) {
    Script(String name, String body) {
      this(name, body, body.getBytes(StandardCharsets.UTF_8), sha1Hex(body));
    }

    private static String sha1Hex(String text) {
      try {
        byte[] digest =
            MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8));
        StringBuilder hex = new StringBuilder(40);
        for (byte b : digest) {
          hex.append(Character.forDigit((b >> 4) & 0xf, 16))
              .append(Character.forDigit(b & 0xf, 16));
        }
        return hex.toString();
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("SHA-1 is required of every Java platform", e);
      }
    }
  }
}

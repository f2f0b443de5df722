package dev.idem.server.config;

/** A config enum whose YAML spelling differs from its Java name. */
public interface ConfigName {

  /**
   * Returns how the value is written in YAML.
   *
   * @return the YAML name, e.g. {@code best-effort}
   */
  String configName();

  /**
   * Parses a YAML name into one of {@code values}.
   *
   * @param text the text written
   * @param values the allowed values
   * @param <E> the enum
   * @return the value
   * @throws dev.idem.IdemConfigException naming the allowed values
   */
  static <E extends Enum<E> & ConfigName> E parse(String text, E[] values) {
    for (E v : values) {
      if (v.configName().equals(text)) {
        return v;
      }
    }
    StringBuilder allowed = new StringBuilder();
    for (int i = 0; i < values.length; i++) {
      if (i > 0) {
        allowed.append(i == values.length - 1 ? " or " : ", ");
      }
      allowed.append(values[i].configName());
    }
    throw new dev.idem.IdemConfigException("'" + text + "' is not allowed; use " + allowed);
  }
}

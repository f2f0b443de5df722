package dev.idem.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * What the benchmarks that compare builds in one JVM share ({@link MemoryStoreBuildsAlternating},
 * {@link KeyDerivationBuildsAlternating}): loading a worker class against one build's jar, in a
 * class loader of its own, and the medians of their alternating rounds.
 */
final class BuildsInOneJvm {
  private BuildsInOneJvm() {}

  /**
   * Defines {@code worker} (a class of this module, with a public no-argument constructor) in a new
   * loader that resolves every other class from {@code jar} and the platform, and returns a new
   * instance: the worker then runs that build's Idem classes, not this module's.
   */
  static Object load(Class<?> worker, String jar) throws Exception {
    String name = worker.getName();
    byte[] code;
    try (InputStream in = worker.getResourceAsStream("/" + name.replace('.', '/') + ".class")) {
      if (in == null) {
        throw new IOException("no class file for " + name);
      }
      code = in.readAllBytes();
    }
    ClassLoader loader =
        new URLClassLoader(
            new URL[] {Path.of(jar).toUri().toURL()}, ClassLoader.getPlatformClassLoader()) {
          @Override
          protected Class<?> findClass(String className) throws ClassNotFoundException {
            return className.equals(name)
                ? defineClass(className, code, 0, code.length)
                : super.findClass(className);
          }
        };
    return loader.loadClass(name).getDeclaredConstructor().newInstance();
  }

  /** The median over rounds of {@code a[i] / b[i]}. */
  static double medianRatio(double[] a, double[] b) {
    double[] r = new double[a.length];
    for (int i = 0; i < a.length; i++) {
      r[i] = a[i] / b[i];
    }
    return median(r);
  }

  /** The median (the mean of the two middle values for an even count). */
  static double median(double[] values) {
    double[] v = values.clone();
    Arrays.sort(v);
    int n = v.length;
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
}

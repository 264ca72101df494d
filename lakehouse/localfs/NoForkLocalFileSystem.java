package brokerscope.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/** {@code fs.file.impl}: Hadoop's checksummed LocalFileSystem over {@link NoForkRawLocalFileSystem}. */
public class NoForkLocalFileSystem extends LocalFileSystem {
  public NoForkLocalFileSystem() {
    super(new NoForkRawLocalFileSystem());
  }
}

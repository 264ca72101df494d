package brokerscope.hadoop;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a child process per call.
 *
 * <p>Without Hadoop's native library, RawLocalFileSystem runs {@code readlink} for every
 * getFileLinkStatus (each rename through FileContext asks it of the source and the target) and
 * {@code chmod} for every setPermission: about 15 process spawns per delta-spark commit on a local
 * table, half of a small commit's time (measured: lakehouse/spark_session.py). Here a path that is
 * not a symbolic link gets its status from getFileStatus, exactly what Hadoop returns for it after
 * its readlink answered nothing, and permissions are set through java.nio. Symbolic links and sticky
 * bits keep Hadoop's own code.
 */
public class NoForkRawLocalFileSystem extends RawLocalFileSystem {

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    File file = pathToFile(f);
    if (Files.isSymbolicLink(file.toPath())) {
      return super.getFileLinkStatus(f);
    }
    return getFileStatus(f);
  }

  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    if (permission.getStickyBit()) {
      super.setPermission(p, permission);
      return;
    }
    Set<PosixFilePermission> perms = EnumSet.noneOf(PosixFilePermission.class);
    add(perms, permission.getUserAction(), PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_EXECUTE);
    add(perms, permission.getGroupAction(), PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
        PosixFilePermission.GROUP_EXECUTE);
    add(perms, permission.getOtherAction(), PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_EXECUTE);
    Files.setPosixFilePermissions(pathToFile(p).toPath(), perms);
  }

  private static void add(Set<PosixFilePermission> perms, FsAction action, PosixFilePermission read,
                          PosixFilePermission write, PosixFilePermission execute) {
    if (action.implies(FsAction.READ)) {
      perms.add(read);
    }
    if (action.implies(FsAction.WRITE)) {
      perms.add(write);
    }
    if (action.implies(FsAction.EXECUTE)) {
      perms.add(execute);
    }
  }
}

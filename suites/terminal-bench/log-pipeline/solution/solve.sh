#!/bin/bash
set -euo pipefail
cat > /app/top_ips.sh <<'SH'
#!/bin/bash
# Usage: top_ips.sh LOG [N]: the N client IPs with the most requests, as "COUNT IP".
set -euo pipefail
export LC_ALL=C
awk '{ print $1 }' "$1" | sort | uniq -c | sort -k1,1nr -k2,2 | head -n "${2:-3}" | awk '{ print $1 " " $2 }'
SH
chmod +x /app/top_ips.sh
/app/top_ips.sh /app/access.log > /app/top_ips.txt
cat /app/top_ips.txt

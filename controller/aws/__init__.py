"""Everything fitguard asks of AWS (Auto Scaling, EC2, EKS) through boto3, and nothing else does."""

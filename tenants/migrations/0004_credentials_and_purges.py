"""One abstract credential model (prefix, digest, expiry, revocation, last use) for keys,
invites, member invites, share links and webhooks; static teams marked; pending purges."""

import hashlib

from django.db import migrations, models


def webhook_digests(apps, schema_editor):
    Webhook = apps.get_model("tenants", "Webhook")
    for hook in Webhook.objects.all():
        hook.digest = hashlib.sha256(hook.secret.encode("utf-8")).hexdigest()
        hook.prefix = hook.secret[:12]
        hook.save(update_fields=["digest", "prefix"])


def member_invite_prefixes(apps, schema_editor):
    MemberInvite = apps.get_model("tenants", "MemberInvite")
    MemberInvite.objects.filter(prefix="").update(prefix="rs_join_")


class Migration(migrations.Migration):
    dependencies = [("tenants", "0003_webhooks")]

    operations = [
        migrations.AddField(
            model_name="team",
            name="is_static",
            field=models.BooleanField(
                default=False, help_text="Created at startup for a static key of API_KEYS."
            ),
        ),
        migrations.AddField(
            model_name="apikey",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="apikey",
            name="prefix",
            field=models.CharField(
                help_text="The first characters, for recognition.", max_length=24
            ),
        ),
        migrations.AlterField(
            model_name="invite",
            name="prefix",
            field=models.CharField(
                help_text="The first characters, for recognition.", max_length=24
            ),
        ),
        migrations.AddField(
            model_name="memberinvite",
            name="prefix",
            field=models.CharField(
                default="", help_text="The first characters, for recognition.", max_length=24
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="memberinvite",
            name="last_used_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="memberinvite",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(member_invite_prefixes, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="sharelink",
            name="prefix",
            field=models.CharField(
                help_text="The first characters, for recognition.", max_length=24
            ),
        ),
        migrations.AddField(
            model_name="sharelink",
            name="last_used_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="webhook",
            name="prefix",
            field=models.CharField(
                default="", help_text="The first characters, for recognition.", max_length=24
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="webhook",
            name="digest",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(webhook_digests, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="webhook",
            name="digest",
            field=models.CharField(max_length=64, unique=True),
        ),
        migrations.AddField(
            model_name="webhook",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="webhook",
            name="revoked_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="webhook",
            name="last_used_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name="PendingPurge",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("room", "Room"), ("credential", "Credential"), ("team", "Team")],
                        max_length=16,
                    ),
                ),
                ("value", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("last_error", models.CharField(blank=True, max_length=300)),
            ],
        ),
    ]
